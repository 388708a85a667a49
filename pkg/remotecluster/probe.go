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

package remotecluster

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Probe checks that the cluster answers with its version, within the
// deadline of ctx. A failure is transient: the cluster may come back.
func Probe(ctx context.Context, kube kubernetes.Interface) error {
	info, err := serverVersion(ctx, kube)
	if err != nil {
		return fmt.Errorf("probing API server: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("Remote API server answered", "gitVersion", info.GitVersion)
	return nil
}

// serverVersion asks /version through the discovery REST client because
// Discovery().ServerVersion() takes no context and so ignores the deadline.
func serverVersion(ctx context.Context, kube kubernetes.Interface) (*version.Info, error) {
	discovery := kube.Discovery()
	restClient := discovery.RESTClient()
	if restClient == nil {
		// Fake clientsets have no REST client; they answer immediately anyway.
		return discovery.ServerVersion()
	}
	body, err := restClient.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("decoding server version: %w", err)
	}
	return &info, nil
}
