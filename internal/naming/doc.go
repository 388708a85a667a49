// Package naming derives the names Kubeocean gives to the objects it
// creates. The rules are part of the contract (docs/operations.md §7 and
// §11): a new version must find the objects an older one made, so they
// never change for existing objects.
package naming
