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

package clusterhealth

import (
	"errors"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// retryEvery is how often a waiting list or watch tries the apiserver again.
const retryEvery = time.Second

// WaitForAnswer returns a copy of config whose GET requests (lists, watches
// and reads) that cannot reach the apiserver are tried again every second
// until they reach it or their context ends. Build the clients of
// informers from it, not those of controllers, which should fail fast.
func WaitForAnswer(config *rest.Config) *rest.Config {
	waiting := rest.CopyConfig(config)
	waiting.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return waitingTransport{next: rt, every: retryEvery}
	})
	return waiting
}

type waitingTransport struct {
	next  http.RoundTripper
	every time.Duration
}

func (t waitingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Body != nil && req.Body != http.NoBody {
		return t.next.RoundTrip(req)
	}
	for {
		resp, err := t.next.RoundTrip(req)
		if err == nil || !unreachable(err) {
			return resp, err
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(t.every):
		}
	}
}

// unreachable reports whether err means no answer came: the connection was
// refused, reset or closed before a response, or the dial timed out.
func unreachable(err error) bool {
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
