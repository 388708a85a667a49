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

package events

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	kubeoceanscheme "github.com/kubeocean/kubeocean/generated/clientset/versioned/scheme"
)

// Scheme knows the built-in kinds and the kubeocean.io kinds, so events can
// refer to ClusterBindings and ResourceLeasingPolicies.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(kubeoceanscheme.AddToScheme(Scheme))
}

// NewRecorder returns a recorder that writes events through kube as
// component, and a function that flushes and stops it on shutdown. Events
// are also logged at verbosity 2 through the logger in ctx.
func NewRecorder(ctx context.Context, kube kubernetes.Interface, component string) (record.EventRecorderLogger, func()) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(2)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: component})
	return recorder, broadcaster.Shutdown
}
