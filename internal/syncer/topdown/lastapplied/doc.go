// Package lastapplied is the three-way merge of string maps (labels,
// annotations) that the top-down controllers use to keep physical objects
// in step with virtual ones without fighting other writers: a controller
// records what it last wrote on the object itself, and on the next pass
// changes only the keys whose desired value changed since (or that it
// enforces) and removes only keys it wrote earlier and no longer wants.
// Keys that others put on the object are left alone.
package lastapplied
