// Package references lists the objects a pod refers to by name in its own
// namespace — ConfigMaps, Secrets and PersistentVolumeClaims — wherever the
// pod spec can name them. The top-down syncer copies exactly these to the
// physical cluster before the pod, rewrites the names in the pod spec, and
// deletes a physical copy once no pod refers to it any more.
package references
