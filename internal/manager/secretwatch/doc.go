// Package secretwatch caches a set of Secrets named one by one, each through
// its own list and watch on its name (a field selector on metadata.name in
// its namespace), started and stopped as the set changes. The manager
// watches this way the kubeconfig Secrets its ClusterBindings reference, and
// no other Secret of the virtual cluster: its memory and the events it
// decodes do not grow with the Secrets the cluster holds.
package secretwatch
