// Package syncertemplate renders the objects of a ClusterBinding's syncer
// (in deployment mode) from Go templates: every *.yaml and *.yml file of a
// folder, in name order, each holding one or more YAML documents. The
// rendered documents are decoded strictly into the client-go kinds the
// manager knows how to keep (a Deployment, exactly one, plus ServiceAccounts
// and ConfigMaps), so a typo in a template fails loudly, at load time when
// possible.
//
// A Source re-reads the folder periodically (a mounted ConfigMap changes in
// place) and reports when the templates changed, so that a template change
// rolls out to every syncer.
package syncertemplate
