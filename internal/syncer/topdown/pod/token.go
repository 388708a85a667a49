package pod

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

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

// ensureTokenSecret makes sure the pod's token Secret holds what plan asks
// for, with tokens of this virtual pod that are not due for renewal, and
// returns when to look again (0: never).
func (c *Controller) ensureTokenSecret(ctx context.Context, virtual *corev1.Pod, physicalName string, plan identityPlan) (time.Duration, error) {
	if plan.empty() {
		return 0, nil
	}
	name := TokenSecretName(physicalName)
	// The Secret we created a moment ago, if its event is not in yet: a
	// create now would only meet AlreadyExists and a live read. It is read
	// before the cache: the Secret's event drops it only once the cache
	// holds the Secret, so one of the two shows it.
	created, remembered := c.createdTokens.Get(name, c.clock.Now())
	existing, err := c.cachedTokenSecret(c.mountNamespace, name)
	switch {
	case err == nil:
		c.createdTokens.Forget(name)
	case apierrors.IsNotFound(err):
		if remembered {
			existing, err = created, nil
		}
	default:
		return 0, err
	}
	found := err == nil
	if found && !c.tokenSecretOurs(existing, virtual.UID) {
		return 0, fmt.Errorf("token Secret %s/%s exists and is not this binding's", c.mountNamespace, name)
	}
	now := c.clock.Now()
	if found {
		if refreshAt, valid := tokenSecretValid(existing, virtual, plan, now); valid {
			return untilRefresh(refreshAt, now), c.refreshMetadata(ctx, existing, virtual, plan)
		}
	}

	data, refreshAt, err := c.issueIdentity(ctx, virtual, plan)
	if err != nil {
		c.recorder.Eventf(virtual, corev1.EventTypeWarning, ReasonTokenRequestFailed, "Issuing the pod's service-account token: %v", err)
		return 0, err
	}
	desired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.mountNamespace,
			Name:      name,
			Labels:    c.owner.Stamp(map[string]string{LabelPodToken: "true"}),
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
		desired.Annotations[AnnotationTokenRefreshAt] = refreshAt.UTC().Format(time.RFC3339)
	}
	if digest := metadataDigest(virtual, plan); digest != "" {
		desired.Annotations[AnnotationMetadataDigest] = digest
	}

	logger := klog.FromContext(ctx).WithValues("secret", klog.KObj(desired))
	if !found {
		created, err := c.physicalClient.Secrets(c.mountNamespace).Create(ctx, desired, metav1.CreateOptions{})
		if err == nil {
			c.createdTokens.Remember(name, created, now)
		}
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind, or an older version made it without
			// the binding's identity, which the cache does not select.
			existing, err = c.adoptableTokenSecret(ctx, virtual, name)
			found = err == nil
		}
		if err != nil {
			return 0, fmt.Errorf("creating token Secret %s/%s: %w", c.mountNamespace, name, err)
		}
		if !found {
			logger.V(2).Info("Created token Secret")
		}
	}
	if found {
		updated := existing.DeepCopy()
		updated.Labels, updated.Annotations, updated.Type, updated.Data = desired.Labels, desired.Annotations, desired.Type, desired.Data
		renewed, err := c.physicalClient.Secrets(c.mountNamespace).Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			c.createdTokens.Forget(name)
			return 0, fmt.Errorf("renewing token Secret %s/%s: %w", c.mountNamespace, name, err)
		}
		c.createdTokens.Replace(name, renewed, now)
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
func tokenSecretValid(secret *corev1.Secret, virtual *corev1.Pod, plan identityPlan, now time.Time) (time.Time, bool) {
	if secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtual.UID) {
		return time.Time{}, false
	}
	for _, key := range plan.keys() {
		if _, ok := secret.Data[key]; !ok {
			return time.Time{}, false
		}
	}
	if len(plan.tokens) == 0 {
		return time.Time{}, true
	}
	refreshAt, err := time.Parse(time.RFC3339, secret.Annotations[AnnotationTokenRefreshAt])
	if err != nil || !now.Before(refreshAt) {
		return time.Time{}, false
	}
	return refreshAt, true
}

// keys are the Secret keys plan needs.
func (p identityPlan) keys() []string {
	keys := make([]string, 0, len(p.tokens)+1+len(p.fields))
	for _, t := range p.tokens {
		keys = append(keys, t.key)
	}
	if p.caCert {
		keys = append(keys, keyCACert)
	}
	for _, field := range p.fields {
		keys = append(keys, secretKey(field))
	}
	return keys
}

// issueIdentity requests the pod's tokens from the virtual cluster, bound
// to the virtual pod so that they die with it, and collects the CA and
// identity values. refreshAt is when the first token is due.
func (c *Controller) issueIdentity(ctx context.Context, virtual *corev1.Pod, plan identityPlan) (map[string][]byte, time.Time, error) {
	data := make(map[string][]byte, len(plan.keys()))
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
		issued, err := c.virtualClient.ServiceAccounts(virtual.Namespace).CreateToken(ctx, serviceAccount, request, metav1.CreateOptions{})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("requesting a token for service account %s/%s: %w", virtual.Namespace, serviceAccount, err)
		}
		data[t.key] = []byte(issued.Status.Token)
		if at := refreshTime(c.clock.Now(), issued.Status.ExpirationTimestamp.Time); refreshAt.IsZero() || at.Before(refreshAt) {
			refreshAt = at
		}
	}
	if plan.caCert {
		caCert, err := c.rootCA(ctx, virtual.Namespace)
		if err != nil {
			return nil, time.Time{}, err
		}
		data[keyCACert] = []byte(caCert)
	}
	for _, field := range plan.fields {
		data[secretKey(field)] = []byte(identityValue(virtual, field))
	}
	return data, refreshAt, nil
}

// rootCA is the virtual cluster's CA as published in namespace, from the
// cache when it has it.
func (c *Controller) rootCA(ctx context.Context, namespace string) (string, error) {
	if c.virtualRootCAs != nil {
		if rootCA, err := c.virtualRootCAs.ConfigMaps(namespace).Get(rootCAConfigMap); err == nil {
			return rootCA.Data[keyCACert], nil
		}
	}
	rootCA, err := c.virtualClient.ConfigMaps(namespace).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the virtual cluster's CA: %w", err)
	}
	return rootCA.Data[keyCACert], nil
}

// adoptableTokenSecret reads the token Secret name live after a create
// found the name taken, and returns it if it is ours to update.
func (c *Controller) adoptableTokenSecret(ctx context.Context, virtual *corev1.Pod, name string) (*corev1.Secret, error) {
	live, err := c.physicalClient.Secrets(c.mountNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if !c.tokenSecretOurs(live, virtual.UID) {
		return nil, fmt.Errorf("the name is taken by a Secret that is not this binding's")
	}
	return live, nil
}

// deleteTokenSecret removes the token Secret of a physical pod that is
// gone, in the namespace its mapping names. Outside the mount namespace
// nothing is cached, so it is read live there. A Secret stays unless it
// is provably ours (see tokenSecretOurs) and records the virtual pod
// virtual (and its UID, when known) as the one it was made for: mapping
// annotations are the tenant's to write, and naming another pod's twin
// there must not cost that pod its token.
func (c *Controller) deleteTokenSecret(ctx context.Context, m mapping, virtual cache.ObjectName, virtualUID types.UID) error {
	if m.namespace == "" || m.name == "" {
		return nil
	}
	name := TokenSecretName(m.name)
	if m.namespace == c.mountNamespace {
		c.createdTokens.Forget(name)
	}
	secret, err := c.cachedTokenSecret(m.namespace, name)
	if apierrors.IsNotFound(err) && m.namespace != c.mountNamespace {
		secret, err = c.physicalClient.Secrets(m.namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.tokenSecretOurs(secret, virtualUID) || !tokenSecretRecords(secret, virtual, virtualUID) {
		klog.FromContext(ctx).V(2).Info("Leaving a token Secret that is not this pod's", "secret", klog.KObj(secret))
		return nil
	}
	err = c.physicalClient.Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{
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
