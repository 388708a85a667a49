// Package intern makes what repeats across many cached objects share one
// copy: strings (label keys and values, node conditions, namespace and node
// names) and whole values such as the label map, the resource requests or
// the container list that the pods of one workload have in common. Objects
// decoded from the API hold a private copy of all of it; across thousands
// of nodes and pods these copies add up to megabytes that say the same
// thing.
//
// Interned strings are ordinary strings: nothing changes for readers.
// Shared maps and slices are ordinary too, but one of them is held by many
// objects, so, like every object of an informer's cache, it must not be
// modified in place (a DeepCopy of the object separates it).
//
// The canonical strings are weakly held by the unique package; this
// package keeps each one's handle, and each shared value, for two garbage
// collections after it was last asked for, so that sharing survives
// collections while what nothing asks for any more is still freed.
package intern
