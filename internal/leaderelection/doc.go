// Package leaderelection runs work only while this process holds a
// coordination.k8s.io Lease, on top of client-go's leader election. Losing
// the lease ends the work and makes Run return an error so the process exits
// and restarts as a candidate; a requested shutdown drains the work first and
// then releases the lease so a standby takes over at once.
package leaderelection
