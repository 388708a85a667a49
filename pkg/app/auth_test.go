package app

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestSharedAuthIsBuiltAndRunOnce: every server of a process gets the one
// Auth, which its owner keeps running; a server's own Run of it returns at
// once instead of watching the client CA a second time.
func TestSharedAuthIsBuiltAndRunOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := fake.NewClientset()
	p := &Process{Kube: kube, Auth: NewSharedAuth(ctx, kube)}
	first, err := p.DelegatingAuth()
	if err != nil {
		t.Fatal(err)
	}
	syncerOfTheProcess := &Process{Kube: fake.NewClientset(), Auth: p.Auth}
	second, err := syncerOfTheProcess.DelegatingAuth()
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("two servers of one process got two Auths")
	}
	returned := make(chan struct{})
	go func() {
		second.Run(context.Background()) // would watch until the test ends
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("a server's Run of the shared Auth did not return")
	}

	// Without a shared one, the caller gets its own, which it runs.
	own, err := (&Process{Kube: kube}).DelegatingAuth()
	if err != nil {
		t.Fatal(err)
	}
	if own == first {
		t.Fatal("a process without a shared Auth got the shared one")
	}
}
