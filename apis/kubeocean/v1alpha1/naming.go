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

package v1alpha1

// The names Kubeocean gives to the objects it creates are part of the
// contract: a new version must find the objects an older one made, so these
// rules never change for existing objects (docs/operations.md, "Names in
// the physical cluster").

import (
	"crypto/md5"
	"encoding/hex"
	"strings"

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
	// A prefix cut after a dot would give ".-", which no DNS name may hold;
	// such names could never be created, so changing them breaks nothing.
	if strings.HasSuffix(prefix, ".") {
		prefix = strings.TrimRight(prefix, ".") + "-"
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

// VirtualNodeNamePrefix begins the name of every virtual node of clusterID
// (VirtualNodeName), hashed or not; a name with it may also be a node of a
// cluster ID that extends clusterID ("a" and "a-b"), so it narrows what to
// look at, and the node's labels decide. The readable part a hashed name
// keeps holds "vnode-<clusterID>-" whenever that fits in it, which it does
// for cluster IDs of up to 23 characters; for longer ones the prefix is cut
// to what the readable part keeps.
func VirtualNodeNamePrefix(clusterID string) string {
	prefix := "vnode-" + clusterID + "-"
	if len(prefix) > physicalNamePrefixLength {
		prefix = prefix[:physicalNamePrefixLength]
	}
	return prefix
}

func hashOf(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// SetPhysicalNodeName records on a virtual object (node, CSINode) the
// physical node it stands for: always in the annotation, and in the label
// of the same key when the name is a valid label value (at most 63
// characters), so that selecting by label keeps working for the usual
// names. Node names may be up to 253 characters long.
func SetPhysicalNodeName(labels, annotations map[string]string, physicalNode string) {
	annotations[AnnotationPhysicalNodeName] = physicalNode
	if len(validation.IsValidLabelValue(physicalNode)) == 0 {
		labels[LabelPhysicalNodeName] = physicalNode
	} else {
		delete(labels, LabelPhysicalNodeName)
	}
}

// PhysicalNodeNameOf is the physical node a virtual object stands for: the
// annotation, else the label (objects written before the annotation
// existed), else "".
func PhysicalNodeNameOf(obj interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}) string {
	if name := obj.GetAnnotations()[AnnotationPhysicalNodeName]; name != "" {
		return name
	}
	return obj.GetLabels()[LabelPhysicalNodeName]
}
