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

package controller_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// A controller over ClusterBindings, built the way Kubeocean's are: the
// generated informers and listers (here over the generated fake clientset),
// a reconcile function over a key, and a Handler turning events into keys.
// Construct first, start the informers after, then Run.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(&kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1"},
		Spec:       kubeoceanv1alpha1.ClusterBindingSpec{ClusterID: "worker-1", MountNamespace: "kubeocean-worker"},
	})
	factory := kubeoceaninformers.NewSharedInformerFactory(client, 0)
	bindings := factory.Kubeocean().V1alpha1().ClusterBindings()

	reconciled := make(chan string, 1)
	c := controller.New(controller.Options[string]{
		Name: "example-bindings",
		Reconcile: func(ctx context.Context, name string) (controller.Result, error) {
			binding, err := bindings.Lister().Get(name)
			if err != nil {
				return controller.Result{}, err
			}
			reconciled <- binding.Name + " mounts into " + binding.Spec.MountNamespace
			return controller.Result{}, nil
		},
	})
	err := c.Watch(bindings.Informer(), controller.Handler[*kubeoceanv1alpha1.ClusterBinding, string]{
		Enqueue: c.Enqueue,
		Keys:    func(b *kubeoceanv1alpha1.ClusterBinding) []string { return []string{b.Name} },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()

	fmt.Println(<-reconciled)
	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// worker-1 mounts into kubeocean-worker
	// stopped: <nil>
}

// A reconcile that creates an object reads the expectations before its
// cache: until the informer delivers the object, the pass its own write
// brings finds it there and does not create it again. Here a map stands for
// the informer's store.
func ExampleExpectations() {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	created := controller.NewExpectations[string, *metav1.ObjectMeta](time.Minute, clock)
	store := map[string]*metav1.ObjectMeta{}
	ensure := func(name string) string {
		if obj, timeLeft, ok := created.GetExpectations(name); ok {
			return fmt.Sprintf("%s expected for %v more, not created again", obj.Name, timeLeft)
		}
		if _, ok := store[name]; ok {
			return name + " cached"
		}
		created.ExpectCreation(name, &metav1.ObjectMeta{Name: name})
		return "created " + name
	}
	fmt.Println(ensure("settings"))
	clock.Step(20 * time.Second)
	fmt.Println(ensure("settings"))

	// The informer delivers it: from now on the cache speaks for it.
	store["settings"] = &metav1.ObjectMeta{Name: "settings"}
	created.CreationObserved("settings")
	fmt.Println(ensure("settings"))

	// An event that never comes costs one retry after the timeout.
	fmt.Println(ensure("limits"))
	clock.Step(time.Minute)
	fmt.Println(created.SatisfiedExpectations("limits"), ensure("limits"))
	// Output:
	// created settings
	// settings expected for 40s more, not created again
	// settings cached
	// created limits
	// true created limits
}
