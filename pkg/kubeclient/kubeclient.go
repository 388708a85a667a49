// Package kubeclient builds the clientset of the built-in Kubernetes API
// the way Kubeocean talks to apiservers: in protobuf. Encoding and decoding
// protobuf costs the apiserver and the client several times less CPU, and
// the client less garbage, than JSON; with thousands of pods and nodes in
// informers and on the watch, that is most of a syncer's work. Custom
// resources (the kubeocean.io clientset) have no protobuf form and stay on
// JSON.
package kubeclient

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// New returns a clientset for config that sends and asks for protobuf,
// accepting JSON from a server that answers in it. config is not changed.
func New(config *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(Protobuf(config))
}

// Protobuf returns a copy of config that speaks protobuf.
func Protobuf(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return config
}
