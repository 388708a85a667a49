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

package podspec

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// APIServer is where physical pods reach the virtual API server.
type APIServer struct {
	host, port string
	// ip is set when host is an IP, which host aliases need.
	ip string
}

// ParseAPIServer reads "host:port"; nil for "".
func ParseAPIServer(address string) (*APIServer, error) {
	if address == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("port %q is not a number between 1 and 65535", port)
	}
	if host == "" {
		return nil, errors.New("host is empty")
	}
	a := &APIServer{host: host, port: port}
	if ip := net.ParseIP(host); ip != nil {
		a.ip = ip.String()
	}
	return a, nil
}
