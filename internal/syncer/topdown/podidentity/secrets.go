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

package podidentity

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ReasonTokenRequestFailed is the Warning event on a virtual pod whose
// service-account token the virtual cluster did not issue.
const ReasonTokenRequestFailed = kubeoceanv1alpha1.ReasonTokenRequestFailed

// createdMemory bounds how long a token Secret just written stands in for
// the cache, which normally shows it within milliseconds.
const createdMemory = time.Minute

// VirtualClient is what Secrets asks of the virtual cluster: tokens, and
// the CA published as kube-root-ca.crt.
type VirtualClient interface {
	corev1client.ServiceAccountsGetter
	corev1client.ConfigMapsGetter
}

// Options are what Secrets needs; RootCAs, Predecessors and Clock are
// optional.
type Options struct {
	// MountNamespace is where the binding's token Secrets are made.
	MountNamespace string
	// Owner stamps the Secrets made, and Predecessors proves earlier
	// bindings whose Secrets are adopted (see Ours).
	Owner        ownership.Owner
	Predecessors *ownership.Predecessors
	Virtual      VirtualClient
	Physical     corev1client.SecretsGetter
	// Cache is the token Secret informer's store, transformed by
	// CompactTokenSecret (or not).
	Cache cache.Indexer
	// RootCAs are the virtual cluster's kube-root-ca.crt ConfigMaps; a CA
	// not there is read live, once per token Secret written.
	RootCAs corev1listers.ConfigMapLister
	// Recorder records the token failures on the virtual pod.
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
}

// Secrets makes, renews and deletes the token Secrets of one binding's
// physical pods. It is safe for concurrent use.
type Secrets struct {
	Options
	// created are the token Secrets of the mount namespace, by name, made
	// or renewed that the cache has not shown yet. The physical pod's
	// events follow their own watch and often come first; without this
	// memory the pass they bring would find no token Secret in the cache
	// and create it again, to meet AlreadyExists (an HTTP 409), a live
	// read and a needless renewal.
	created *controller.Expectations[string, *corev1.Secret]
}

// New returns the token Secrets of a binding.
func New(opts Options) *Secrets {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Secrets{Options: opts, created: controller.NewExpectations[string, *corev1.Secret](createdMemory, opts.Clock)}
}

// IsTokenSecret tells the token Secrets of this binding in the mount
// namespace, those whose events concern the controller.
func (s *Secrets) IsTokenSecret(secret metav1.Object) bool {
	return secret.GetNamespace() == s.MountNamespace && secret.GetLabels()[kubeoceanv1alpha1.LabelPodToken] == "true" && s.Owner.Owns(secret)
}

// Seen tells that the cache delivered an event of secret: from then on the
// cache speaks for it, also when that event is a deletion. Call it in the
// event handler, before the pass the event brings.
func (s *Secrets) Seen(secret metav1.Object) { s.created.CreationObserved(secret.GetName()) }

// Ours tells whether a token Secret is this binding's: it carries the
// binding's identity, or an older version or a proven predecessor made it
// for the virtual pod virtualUID (known only while the virtual pod is).
func (s *Secrets) Ours(secret *corev1.Secret, virtualUID types.UID) bool {
	if s.Owner.Owns(secret) {
		return true
	}
	return virtualUID != "" && (ownership.Legacy(secret) || s.Predecessors.Proven(secret)) &&
		secret.Labels[kubeoceanv1alpha1.LabelPodToken] == "true" &&
		secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(virtualUID)
}

// maxTokenRefresh caps how long a token goes unrenewed, as the kubelet does
// for projected tokens.
const maxTokenRefresh = 24 * time.Hour

// refreshTime is when a token issued now and expiring at expiry is renewed:
// at 80% of its lifetime (the kubelet's rule), at most a day on.
func refreshTime(now, expiry time.Time) time.Time {
	wait := expiry.Sub(now) * 8 / 10
	wait = min(max(wait, 0), maxTokenRefresh)
	return now.Add(wait)
}

// Ensure makes sure the pod's token Secret holds what plan asks
// for, with tokens of this virtual pod that are not due for renewal, and
// returns when to look again (0: never).
func (s *Secrets) Ensure(ctx context.Context, virtual *corev1.Pod, physicalName string, plan Plan) (time.Duration, error) {
	if plan.Empty() {
		return 0, nil
	}
	name := SecretName(physicalName)
	// The Secret we created a moment ago, if its event is not in yet: a
	// create now would only meet AlreadyExists and a live read. It is read
	// before the cache: the Secret's event drops it only once the cache
	// holds the Secret, so one of the two shows it.
	created, _, remembered := s.created.GetExpectations(name)
	existing, err := s.cached(s.MountNamespace, name)
	switch {
	case err == nil:
		s.created.CreationObserved(name)
	case apierrors.IsNotFound(err):
		if remembered {
			existing, err = created, nil
		}
	default:
		return 0, err
	}
	found := err == nil
	if found && !s.Ours(existing, virtual.UID) {
		return 0, fmt.Errorf("token Secret %s/%s exists and is not this binding's", s.MountNamespace, name)
	}
	now := s.Clock.Now()
	if found {
		if refreshAt, valid := tokenSecretValid(existing, virtual, plan, now); valid {
			return untilRefresh(refreshAt, now), s.refreshMetadata(ctx, existing, virtual, plan)
		}
	}

	data, refreshAt, err := s.issueIdentity(ctx, virtual, plan)
	if err != nil {
		s.Recorder.Eventf(virtual, corev1.EventTypeWarning, ReasonTokenRequestFailed, "Issuing the pod's service-account token: %v", err)
		return 0, err
	}
	desired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.MountNamespace,
			Name:      name,
			Labels:    s.Owner.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtual.Namespace,
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtual.Name,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtual.UID),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if !refreshAt.IsZero() {
		desired.Annotations[kubeoceanv1alpha1.AnnotationTokenRefreshAt] = refreshAt.UTC().Format(time.RFC3339)
	}
	if digest := metadataDigest(virtual, plan); digest != "" {
		desired.Annotations[kubeoceanv1alpha1.AnnotationMetadataDigest] = digest
	}

	logger := klog.FromContext(ctx).WithValues("secret", klog.KObj(desired))
	if !found {
		created, err := s.Physical.Secrets(s.MountNamespace).Create(ctx, desired, metav1.CreateOptions{})
		if err == nil {
			s.created.ExpectCreation(name, created)
		}
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind, or an older version made it without
			// the binding's identity, which the cache does not select.
			existing, err = s.adoptable(ctx, virtual, name)
			found = err == nil
		}
		if err != nil {
			return 0, fmt.Errorf("creating token Secret %s/%s: %w", s.MountNamespace, name, err)
		}
		if !found {
			logger.V(2).Info("Created token Secret")
		}
	}
	if found {
		updated := existing.DeepCopy()
		updated.Labels, updated.Annotations, updated.Type, updated.Data = desired.Labels, desired.Annotations, desired.Type, desired.Data
		renewed, err := s.Physical.Secrets(s.MountNamespace).Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			s.created.DeleteExpectations(name)
			return 0, fmt.Errorf("renewing token Secret %s/%s: %w", s.MountNamespace, name, err)
		}
		s.created.UpdateExpectation(name, renewed)
		logger.V(2).Info("Renewed token Secret")
	}
	return untilRefresh(refreshAt, now), nil
}

func untilRefresh(refreshAt, now time.Time) time.Duration {
	if refreshAt.IsZero() {
		return 0
	}
	return max(refreshAt.Sub(now), time.Second)
}

// tokenSecretValid tells whether secret serves the virtual pod as plan
// asks, and when its tokens are due (zero without tokens).
func tokenSecretValid(secret *corev1.Secret, virtual *corev1.Pod, plan Plan, now time.Time) (time.Time, bool) {
	if secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtual.UID) {
		return time.Time{}, false
	}
	for _, key := range plan.Keys() {
		if _, ok := secret.Data[key]; !ok {
			return time.Time{}, false
		}
	}
	if len(plan.tokens) == 0 {
		return time.Time{}, true
	}
	refreshAt, err := time.Parse(time.RFC3339, secret.Annotations[kubeoceanv1alpha1.AnnotationTokenRefreshAt])
	if err != nil || !now.Before(refreshAt) {
		return time.Time{}, false
	}
	return refreshAt, true
}

// Keys are the Secret keys plan needs.
func (p Plan) Keys() []string {
	keys := make([]string, 0, len(p.tokens)+1+len(p.fields))
	for _, t := range p.tokens {
		keys = append(keys, t.key)
	}
	if p.caCert {
		keys = append(keys, KeyCACert)
	}
	for _, field := range p.fields {
		keys = append(keys, SecretKey(field))
	}
	return keys
}

// issueIdentity requests the pod's tokens from the virtual cluster, bound
// to the virtual pod so that they die with it, and collects the CA and
// identity values. refreshAt is when the first token is due.
func (s *Secrets) issueIdentity(ctx context.Context, virtual *corev1.Pod, plan Plan) (map[string][]byte, time.Time, error) {
	data := make(map[string][]byte, len(plan.Keys()))
	serviceAccount := virtual.Spec.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	var refreshAt time.Time
	for _, t := range plan.tokens {
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(t.expirationSeconds),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: virtual.Name, UID: virtual.UID},
		}}
		if t.audience != "" {
			request.Spec.Audiences = []string{t.audience}
		}
		issued, err := s.Virtual.ServiceAccounts(virtual.Namespace).CreateToken(ctx, serviceAccount, request, metav1.CreateOptions{})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("requesting a token for service account %s/%s: %w", virtual.Namespace, serviceAccount, err)
		}
		data[t.key] = []byte(issued.Status.Token)
		if at := refreshTime(s.Clock.Now(), issued.Status.ExpirationTimestamp.Time); refreshAt.IsZero() || at.Before(refreshAt) {
			refreshAt = at
		}
	}
	if plan.caCert {
		caCert, err := s.rootCA(ctx, virtual.Namespace)
		if err != nil {
			return nil, time.Time{}, err
		}
		data[KeyCACert] = []byte(caCert)
	}
	for _, field := range plan.fields {
		data[SecretKey(field)] = []byte(Value(virtual, field))
	}
	return data, refreshAt, nil
}

// rootCA is the virtual cluster's CA as published in namespace, from the
// cache when it has it.
func (s *Secrets) rootCA(ctx context.Context, namespace string) (string, error) {
	if s.RootCAs != nil {
		if rootCA, err := s.RootCAs.ConfigMaps(namespace).Get(rootCAConfigMap); err == nil {
			return rootCA.Data[KeyCACert], nil
		}
	}
	rootCA, err := s.Virtual.ConfigMaps(namespace).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the virtual cluster's CA: %w", err)
	}
	return rootCA.Data[KeyCACert], nil
}

// adoptable reads the token Secret name live after a create
// found the name taken, and returns it if it is ours to update.
func (s *Secrets) adoptable(ctx context.Context, virtual *corev1.Pod, name string) (*corev1.Secret, error) {
	live, err := s.Physical.Secrets(s.MountNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if !s.Ours(live, virtual.UID) {
		return nil, fmt.Errorf("the name is taken by a Secret that is not this binding's")
	}
	return live, nil
}

// Delete removes the token Secret of the physical pod namespace/
// physicalName, which is gone. Outside the mount namespace
// nothing is cached, so it is read live there. A Secret stays unless it
// is provably ours (see Ours) and records the virtual pod
// virtual (and its UID, when known) as the one it was made for: mapping
// annotations are the tenant's to write, and naming another pod's twin
// there must not cost that pod its token.
func (s *Secrets) Delete(ctx context.Context, namespace, physicalName string, virtual cache.ObjectName, virtualUID types.UID) error {
	if namespace == "" || physicalName == "" {
		return nil
	}
	name := SecretName(physicalName)
	if namespace == s.MountNamespace {
		s.created.DeleteExpectations(name)
	}
	secret, err := s.cached(namespace, name)
	if apierrors.IsNotFound(err) && namespace != s.MountNamespace {
		secret, err = s.Physical.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !s.Ours(secret, virtualUID) || !tokenSecretRecords(secret, virtual, virtualUID) {
		klog.FromContext(ctx).V(2).Info("Leaving a token Secret that is not this pod's", "secret", klog.KObj(secret))
		return nil
	}
	err = s.Physical.Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &secret.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting token Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted token Secret", "secret", klog.KObj(secret))
	return nil
}

// tokenSecretRecords tells whether secret was made for the virtual pod
// virtual: it records its namespace and name, and its UID when uid is
// known (a pod that is gone is known by its key only).
func tokenSecretRecords(secret *corev1.Secret, virtual cache.ObjectName, uid types.UID) bool {
	recorded := secret.Annotations
	return recorded[kubeoceanv1alpha1.AnnotationVirtualPodNamespace] == virtual.Namespace &&
		recorded[kubeoceanv1alpha1.AnnotationVirtualPodName] == virtual.Name &&
		(uid == "" || recorded[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(uid))
}
