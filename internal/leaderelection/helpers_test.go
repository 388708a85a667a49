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

package leaderelection

import (
	"context"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

const testNamespace = "kubeocean-system"

// testOptions are short enough for quick tests yet leave a leader several
// renewals of slack on a loaded machine before a standby may take over.
func testOptions(leaseName, identity string) Options {
	return Options{
		Enabled:        true,
		LeaseName:      leaseName,
		LeaseNamespace: testNamespace,
		Identity:       identity,
		LeaseDuration:  2 * time.Second,
		RenewDeadline:  time.Second,
		RetryPeriod:    100 * time.Millisecond,
	}
}

// newLeaseClient returns a fake clientset that rejects stale Lease updates
// like an API server does, so two candidates cannot both win a race.
func newLeaseClient() *fake.Clientset {
	client := fake.NewClientset()
	version := 0 // guarded by the fake's lock, which is held while reactors run
	client.PrependReactor("*", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		verb := action.GetVerb()
		if verb != "create" && verb != "update" {
			return false, nil, nil
		}
		lease := action.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease)
		if verb == "update" {
			stored, err := client.Tracker().Get(action.GetResource(), lease.Namespace, lease.Name)
			if err == nil && stored.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
				return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), lease.Name, nil)
			}
		}
		version++
		lease.ResourceVersion = strconv.Itoa(version)
		return false, nil, nil // let the default reactor store it
	})
	return client
}

func getLease(t *testing.T, client *fake.Clientset, name string) *coordinationv1.Lease {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting lease: %v", err)
	}
	return lease
}

func holder(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// waitFor fails the test if ch does not deliver within timeout.
func waitFor[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}
