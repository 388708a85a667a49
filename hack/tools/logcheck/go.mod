// Tools module for the contextual-logging check (hack/verify-logging.sh).
// Nothing here is imported by Kubeocean itself.
module github.com/kubeocean/kubeocean/hack/tools/logcheck

go 1.26.0

tool sigs.k8s.io/logtools/logcheck

require (
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
	golang.org/x/mod v0.21.0 // indirect
	golang.org/x/sync v0.8.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
	sigs.k8s.io/logtools v0.11.0 // indirect
)
