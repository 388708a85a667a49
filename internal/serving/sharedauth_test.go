/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package serving

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
	shared := NewSharedAuth(ctx, fake.NewClientset())
	first, err := shared.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Nothing of it may outlive the test.
		cancel()
		<-shared.stopped
	}()
	second, err := shared.Get()
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
	if stopped := second.Start(context.Background()); stopped != nil {
		t.Error("Start of a running Auth started it again")
	}
}
