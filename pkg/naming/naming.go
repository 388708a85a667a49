// Package naming derives the names Kubeocean gives to the objects it
// creates. The rules are part of the contract (design.md §2), so they never
// change for existing objects.
package naming

import (
	"crypto/md5"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/util/validation"
)

// physicalNamePrefixLength is how much of a virtual name is kept readable in
// front of the hash.
const physicalNamePrefixLength = 30

// PhysicalName is the name in the physical cluster of the virtual object
// namespace/name: name[:30] + "-" + hex(md5(namespace + "/" + name)). The
// hash keeps objects of different virtual namespaces apart in the one mount
// namespace.
func PhysicalName(namespace, name string) string {
	prefix := name
	if len(prefix) > physicalNamePrefixLength {
		prefix = prefix[:physicalNamePrefixLength]
	}
	return prefix + "-" + hashOf(namespace+"/"+name)
}

// VirtualNodeName is the name of the virtual node standing for a physical
// node: vnode-<clusterID>-<node>, or, when that exceeds the 63 characters a
// node name may have for its labels, the physical-name rule applied to it.
func VirtualNodeName(clusterID, physicalNode string) string {
	name := "vnode-" + clusterID + "-" + physicalNode
	if len(name) <= validation.DNS1123LabelMaxLength {
		return name
	}
	return PhysicalName(clusterID, name)
}

func hashOf(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
