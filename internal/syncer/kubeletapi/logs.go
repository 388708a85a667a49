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

package kubeletapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// logsOptions decodes the kubelet's containerLogs query (the parameters of
// PodLogOptions: follow, tailLines, limitBytes, sinceSeconds, sinceTime,
// timestamps, previous, stream) for container.
func logsOptions(r *http.Request, container string) (*corev1.PodLogOptions, error) {
	q := r.URL.Query()
	opts := &corev1.PodLogOptions{Container: container}
	var errs []error
	boolean := func(key string) bool {
		v, err := parseOptional(q.Get(key), strconv.ParseBool)
		errs = append(errs, err)
		return v
	}
	integer := func(key string) *int64 {
		if q.Get(key) == "" {
			return nil
		}
		v, err := strconv.ParseInt(q.Get(key), 10, 64)
		errs = append(errs, err)
		return &v
	}
	opts.Follow, opts.Previous, opts.Timestamps = boolean("follow"), boolean("previous"), boolean("timestamps")
	opts.TailLines, opts.LimitBytes, opts.SinceSeconds = integer("tailLines"), integer("limitBytes"), integer("sinceSeconds")
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		errs = append(errs, err)
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if v := q.Get("stream"); v != "" {
		opts.Stream = &v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &requestError{Code: http.StatusBadRequest, Message: "invalid log options: " + err.Error()}
	}
	if opts.SinceSeconds != nil && opts.SinceTime != nil {
		return nil, &requestError{Code: http.StatusBadRequest, Message: "at most one of sinceSeconds or sinceTime may be specified"}
	}
	return opts, nil
}

func parseOptional[T any](s string, parse func(string) (T, error)) (T, error) {
	var zero T
	if s == "" {
		return zero, nil
	}
	return parse(s)
}

// serveLogs streams a container's log from the physical apiserver. Each
// chunk is flushed as it arrives, so that a follow shows lines as they are
// written; the physical stream is bound to the request's context, so it
// closes as soon as the client (the virtual apiserver) goes away.
func (s *nodeServer) serveLogs(w http.ResponseWriter, r *http.Request) error {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := logsOptions(r, container)
	if err != nil {
		return err
	}
	target, err := s.resolver.pod(s.node, ns, name, container)
	if err != nil {
		return err
	}
	stream, err := s.physical.CoreV1().Pods(target.Namespace).GetLogs(target.Name, opts).Stream(r.Context())
	if err != nil {
		return physicalError(r.Context(), "logs", target, err)
	}
	defer func() { _ = stream.Close() }()

	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	counted := &countingWriter{w: flushWriter{w: w, rc: http.NewResponseController(w)}}
	_, err = io.Copy(counted, stream)
	s.metrics.bytes.WithLabelValues(opLogs).Add(float64(counted.n))
	if err != nil && r.Context().Err() == nil {
		klog.FromContext(r.Context()).V(2).Info("Log stream ended with an error", "pod", klog.KRef(ns, name), "err", err)
	}
	return nil
}

// physicalError turns a failed physical call into the error the client
// sees, and logs it: the physical cluster's view is not the user's, and
// the operator needs to know which physical pod failed.
func physicalError(ctx context.Context, op string, target physicalPod, err error) error {
	klog.FromContext(ctx).Error(err, "Physical cluster call failed", "operation", op,
		"physicalPod", klog.KRef(target.Namespace, target.Name), "node", target.Node)
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		if code == 0 {
			code = http.StatusBadGateway
		}
		return &requestError{Code: code, Message: "physical cluster: " + status.Status().Message}
	}
	return &requestError{Code: http.StatusBadGateway, Message: "physical cluster: " + err.Error()}
}

// flushWriter flushes after every write.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
