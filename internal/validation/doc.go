// Package validation checks ClusterBinding and ResourceLeasingPolicy specs on
// the Go side. The CRD schema rejects most bad objects at admission; the
// controllers validate again because objects may predate the schema, may be
// created where the schema is older, and because some rules (a known time
// zone) cannot be written in the schema.
package validation
