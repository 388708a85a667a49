// Package podspec makes the physical pod of a virtual pod and keeps it in
// step: PhysicalPod translates the virtual pod (the physical node, the
// copies' names, the identity served from the token Secret, the binding's
// network, scheduling fields dropped), and UpdatePatch carries later
// changes of the virtual pod's metadata, deadline and images by a
// three-way merge over AnnotationLastApplied. It only computes: the pod
// controller (package pod) reads the caches and writes.
package podspec
