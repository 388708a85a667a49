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
	"context"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultProbePeriod is how often a Prober asks the apiserver.
const DefaultProbePeriod = 5 * time.Second

// Prober asks an apiserver's /readyz every period and remembers when it
// last answered. It is safe for concurrent use.
type Prober struct {
	name     string
	client   rest.Interface
	period   time.Duration
	clock    clock.WithTicker
	onChange func(answers bool)

	mu       sync.Mutex
	answered time.Time
	answers  bool
}

// ProberOptions configure a Prober.
type ProberOptions struct {
	// Name names the cluster in logs ("physical").
	Name string
	// Client reaches the apiserver; a discovery client's RESTClient will do.
	Client rest.Interface
	// Period between probes; default DefaultProbePeriod. A probe that takes
	// longer than a period counts as no answer.
	Period time.Duration
	// OnChange is called, from the probing goroutine, when the apiserver
	// starts or stops answering.
	OnChange func(answers bool)
	// Clock is for tests.
	Clock clock.WithTicker
}

// NewProber returns a prober that considers the apiserver answering until a
// probe says otherwise: it starts after the clients were checked to work.
func NewProber(opts ProberOptions) *Prober {
	p := &Prober{name: opts.Name, client: opts.Client, period: opts.Period, clock: opts.Clock, onChange: opts.OnChange, answers: true}
	if p.period <= 0 {
		p.period = DefaultProbePeriod
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	p.answered = p.clock.Now()
	return p
}

// Answers reports whether the apiserver answered within the last two
// periods: one failed probe is not yet an outage.
func (p *Prober) Answers() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers
}

// LastAnswer is when the apiserver last answered a probe (the prober's
// start before its first probe). While Answers is false it dates the
// outage, and, being fixed until the apiserver answers again, it can stamp
// what is written about the outage without making each write differ.
func (p *Prober) LastAnswer() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered
}

// Run probes until ctx ends.
func (p *Prober) Run(ctx context.Context) error {
	ticker := p.clock.NewTicker(p.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			p.probe(ctx)
		}
	}
}

func (p *Prober) probe(ctx context.Context) {
	probeCtx, cancel := context.WithTimeout(ctx, p.period)
	defer cancel()
	err := p.client.Get().AbsPath("/readyz").Do(probeCtx).Error()
	if ctx.Err() != nil {
		return
	}
	p.record(klog.FromContext(ctx), err)
}

// record notes a probe's outcome and reports a change of state.
func (p *Prober) record(logger klog.Logger, err error) {
	now := p.clock.Now()
	p.mu.Lock()
	if err == nil {
		p.answered = now
	}
	was := p.answers
	p.answers = now.Sub(p.answered) < 2*p.period
	answers, answered := p.answers, p.answered
	p.mu.Unlock()
	if was == answers {
		return
	}
	if answers {
		logger.Info("The apiserver answers again", "cluster", p.name)
	} else {
		logger.Error(err, "The apiserver does not answer", "cluster", p.name, "lastAnswer", answered)
	}
	if p.onChange != nil {
		p.onChange(answers)
	}
}
