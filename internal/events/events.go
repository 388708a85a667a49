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
