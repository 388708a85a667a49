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

package timewindow

import (
	"fmt"
	"slices"
	"time"
	_ "time/tzdata" // time zones must resolve also in images without /usr/share/zoneinfo

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// lookAheadDays bounds the search for the next transition: every window
// opens at least once a week and closes within a day of opening.
const lookAheadDays = 8

// Schedule is a parsed, validated set of windows in one time zone.
type Schedule struct {
	location *time.Location
	windows  []window
}

type window struct {
	spec        kubeoceanv1alpha1.TimeWindow
	start, end  clock
	openOnDay   [7]bool // indexed by time.Weekday
	wholeDay    bool
	crossesMidn bool
}

// State is the state of a Schedule at one instant.
type State struct {
	// Active is true when the nodes are lent.
	Active bool
	// Window is the open window, nil when none is open or when the schedule
	// has no windows at all (always active).
	Window *kubeoceanv1alpha1.TimeWindow
	// NextTransition is when Active next changes; zero when it never does.
	NextTransition time.Time
}

// New parses windows and a time zone (empty means UTC). The error names the
// offending field, in the form the API uses.
func New(windows []kubeoceanv1alpha1.TimeWindow, timeZone string) (*Schedule, error) {
	location, err := LoadLocation(timeZone)
	if err != nil {
		return nil, err
	}
	s := &Schedule{location: location}
	for i, spec := range windows {
		w, err := parseWindow(spec)
		if err != nil {
			return nil, fmt.Errorf("timeWindows[%d]: %w", i, err)
		}
		s.windows = append(s.windows, w)
	}
	return s, nil
}

// LoadLocation resolves an IANA time zone name; empty means UTC.
func LoadLocation(timeZone string) (*time.Location, error) {
	if timeZone == "" {
		return time.UTC, nil
	}
	location, err := time.LoadLocation(timeZone)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q is not a known IANA time zone", timeZone)
	}
	return location, nil
}

func parseWindow(spec kubeoceanv1alpha1.TimeWindow) (window, error) {
	w := window{spec: spec}
	var err error
	if w.start, err = parseClockValue(spec.Start); err != nil {
		return w, fmt.Errorf("start: %w", err)
	}
	if w.end, err = parseClockValue(spec.End); err != nil {
		return w, fmt.Errorf("end: %w", err)
	}
	w.wholeDay = w.start == w.end
	w.crossesMidn = w.end < w.start
	if len(spec.Days) == 0 {
		for d := range w.openOnDay {
			w.openOnDay[d] = true
		}
	}
	for _, day := range spec.Days {
		weekday, ok := ParseDay(day)
		if !ok {
			return w, fmt.Errorf("days: %q is not a day name (monday..sunday, in any case)", day)
		}
		w.openOnDay[weekday] = true
	}
	return w, nil
}

// AlwaysActive reports whether the schedule has no windows and so lends at
// all times.
func (s *Schedule) AlwaysActive() bool { return len(s.windows) == 0 }

// Location is the time zone the windows are read in.
func (s *Schedule) Location() *time.Location { return s.location }

// At evaluates the schedule at instant now.
func (s *Schedule) At(now time.Time) State {
	if s.AlwaysActive() {
		return State{Active: true}
	}
	open := s.openWindow(now)
	state := State{Active: open != nil}
	if open != nil {
		spec := open.spec
		state.Window = &spec
	}
	state.NextTransition = s.nextTransition(now, state.Active)
	return state
}

// openWindow returns the first window, in spec order, that contains now.
func (s *Schedule) openWindow(now time.Time) *window {
	today := dateOf(now.In(s.location))
	for i := range s.windows {
		w := &s.windows[i]
		// A window that crosses midnight (or lasts a whole day) may have
		// opened yesterday.
		for _, day := range []date{today.addDays(-1), today} {
			if !w.openOnDay[day.weekday()] {
				continue
			}
			opens, closes := w.occurrence(day, s.location)
			if !now.Before(opens) && now.Before(closes) {
				return w
			}
		}
	}
	return nil
}

// nextTransition finds the first window boundary after now at which the
// schedule's state differs from active. Boundaries where one window closes
// as another opens do not count.
func (s *Schedule) nextTransition(now time.Time, active bool) time.Time {
	today := dateOf(now.In(s.location))
	var boundaries []time.Time
	for i := range s.windows {
		w := &s.windows[i]
		for offset := -1; offset <= lookAheadDays; offset++ {
			day := today.addDays(offset)
			if !w.openOnDay[day.weekday()] {
				continue
			}
			opens, closes := w.occurrence(day, s.location)
			for _, b := range []time.Time{opens, closes} {
				if b.After(now) {
					boundaries = append(boundaries, b)
				}
			}
		}
	}
	slices.SortFunc(boundaries, func(a, b time.Time) int { return a.Compare(b) })
	for _, b := range boundaries {
		if (s.openWindow(b) != nil) != active {
			return b
		}
	}
	return time.Time{}
}

// occurrence is the instant the window opens on the given day and the
// instant it then closes.
func (w *window) occurrence(day date, location *time.Location) (opens, closes time.Time) {
	opens = day.at(w.start, location)
	closeDay := day
	if w.crossesMidn || w.wholeDay {
		closeDay = day.addDays(1)
	}
	return opens, closeDay.at(w.end, location)
}
