// Package podidentity gives a physical pod the identity of its virtual pod.
//
// A pod in the physical cluster must still see itself as the virtual pod:
// its service-account token must be one of the virtual cluster, bound to
// the virtual pod, with the virtual cluster's CA; and the downward API must
// answer the virtual name, namespace, UID, node, labels and annotations.
// The physical kubelet can provide none of that, so each such pod gets a
// Secret of its own, the token Secret (SecretName, label
// kubeoceanv1alpha1.LabelPodToken), and the physical pod mounts these
// values from there at the same paths.
//
// PlanFor says what a pod's token Secret must hold; Secrets makes,
// renews, and deletes it, and reads it from a cache that keeps a compact
// record of it (CompactTokenSecret). The pod controller (package pod)
// calls Secrets.Ensure before it creates a physical pod and on every later
// pass, Secrets.Delete once the physical pod is gone, and Secrets.Seen
// from its token Secret event handler.
package podidentity
