package pod

import (
	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/nametaken"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
)

// The names users see on virtual pods and token Secrets are declared in
// apis/kubeocean/v1alpha1 (well_known.go, well_known_reasons.go); these are
// the same names under which the syncer's wiring and the tests read them.
const (
	ConditionPhysicalPodCreated         = kubeoceanv1alpha1.PodConditionPhysicalPodCreated
	ConditionDependenciesReady          = kubeoceanv1alpha1.PodConditionDependenciesReady
	ConditionEphemeralContainersAllowed = kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed

	ReasonPodSecurityViolation        = kubeoceanv1alpha1.ReasonPodSecurityViolation
	ReasonDaemonSetPodNotSynced       = kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced
	ReasonVolumeSourceNotAllowed      = kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed
	ReasonHostPortInUse               = kubeoceanv1alpha1.ReasonHostPortInUse
	ReasonPhysicalPodCreated          = kubeoceanv1alpha1.ReasonPhysicalPodCreated
	ReasonPhysicalPodRejected         = kubeoceanv1alpha1.ReasonPhysicalPodRejected
	ReasonRuntimeClassNotAllowed      = kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed
	ReasonVolumeSourceNotSupported    = kubeoceanv1alpha1.ReasonVolumeSourceNotSupported
	ReasonEphemeralContainersAllowed  = kubeoceanv1alpha1.ReasonEphemeralContainersAllowed
	ReasonDependencyNotReady          = kubeoceanv1alpha1.ReasonDependencyNotReady
	ReasonDependencyConflict          = kubeoceanv1alpha1.ReasonDependencyConflict
	ReasonDependenciesReady           = kubeoceanv1alpha1.ReasonDependenciesReady
	ReasonPhysicalPodLost             = kubeoceanv1alpha1.ReasonPhysicalPodLost
	ReasonPhysicalPodNameTaken        = kubeoceanv1alpha1.ReasonPhysicalPodNameTaken
	ReasonMappingMismatch             = kubeoceanv1alpha1.ReasonPhysicalPodMappingMismatch
	ReasonTokenRequestFailed          = kubeoceanv1alpha1.ReasonTokenRequestFailed
	ReasonEphemeralContainersRejected = kubeoceanv1alpha1.ReasonEphemeralContainersRejected

	LabelPodToken            = kubeoceanv1alpha1.LabelPodToken
	AnnotationTokenRefreshAt = kubeoceanv1alpha1.AnnotationTokenRefreshAt
)

// The token Secret, whose making and cache live in package podidentity.
var (
	// TokenSecretName is the name of the token Secret of a physical pod.
	TokenSecretName = podidentity.SecretName
	// CompactTokenSecret is the token Secret informer's transform.
	CompactTokenSecret = podidentity.CompactTokenSecret
)

// TokenSecretRecord is what the token Secret cache keeps of a Secret.
type TokenSecretRecord = podidentity.TokenSecretRecord

// Network is what the pods' names and service links are made from
// (Options.Network); ServiceLink one of those links.
type (
	Network     = podspec.Network
	ServiceLink = podspec.ServiceLink
)

// BindingStatusWriter reads and updates the binding's status
// (Options.BindingStatus).
type BindingStatusWriter = nametaken.BindingStatusWriter
