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
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	testNamespace = "clusters"
	testSecret    = "worker-1"
)

// kubeconfigFor renders a self-contained token kubeconfig; edit lets a test
// break or extend it.
func kubeconfigFor(t *testing.T, server string, edit func(*clientcmdapi.Config)) []byte {
	t.Helper()
	config := clientcmdapi.NewConfig()
	config.Clusters["worker"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	config.Contexts["worker"] = &clientcmdapi.Context{Cluster: "worker", AuthInfo: "admin"}
	config.CurrentContext = "worker"
	if edit != nil {
		edit(config)
	}
	data, err := clientcmd.Write(*config)
	if err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return data
}

func kubeconfigSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret},
		Data:       data,
	}
}

func updateKubeconfig(t *testing.T, client *fake.Clientset, kubeconfig []byte) {
	t.Helper()
	secret := kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfig})
	_, err := client.CoreV1().Secrets(testNamespace).Update(context.Background(), secret, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating secret: %v", err)
	}
}

// countingBuilder records how many times clients were built and from which host.
type countingBuilder struct {
	builds atomic.Int32
	before func() // runs inside each build, e.g. to widen race windows
}

type testClients struct {
	host string
}

func (b *countingBuilder) build(config *rest.Config) (testClients, error) {
	b.builds.Add(1)
	if b.before != nil {
		b.before()
	}
	return testClients{host: config.Host}, nil
}
