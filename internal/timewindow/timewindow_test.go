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
	"testing"
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func tw(start, end string, days ...kubeoceanv1alpha1.DayOfWeek) kubeoceanv1alpha1.TimeWindow {
	return kubeoceanv1alpha1.TimeWindow{Start: start, End: end, Days: days}
}

func mustParse(t *testing.T, layout string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, layout)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestParseClock(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "00:00", want: 0},
		{in: "09:30", want: 570},
		{in: "23:59", want: 1439},
		{in: "24:00", wantErr: true},
		{in: "12:60", wantErr: true},
		{in: "9:30", wantErr: true},
		{in: "09-30", wantErr: true},
		{in: "ab:cd", wantErr: true},
		{in: "", wantErr: true},
		{in: "09:300", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseClock(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseClock(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got != tt.want {
			t.Errorf("ParseClock(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	tests := []struct {
		name     string
		windows  []kubeoceanv1alpha1.TimeWindow
		timeZone string
	}{
		{name: "unknown zone", timeZone: "Mars/Olympus"},
		{name: "bad start", windows: []kubeoceanv1alpha1.TimeWindow{tw("25:00", "10:00")}},
		{name: "bad end", windows: []kubeoceanv1alpha1.TimeWindow{tw("08:00", "10")}},
		{name: "bad day", windows: []kubeoceanv1alpha1.TimeWindow{tw("08:00", "10:00", "funday")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.windows, tt.timeZone); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
}

// 2026-11-20 is a Friday.
func TestScheduleAt(t *testing.T) {
	weekdays := []kubeoceanv1alpha1.DayOfWeek{"monday", "tuesday", "wednesday", "thursday", "friday"}
	tests := []struct {
		name       string
		windows    []kubeoceanv1alpha1.TimeWindow
		timeZone   string
		now        string
		wantActive bool
		wantWindow string // start of the open window
		wantNext   string // RFC3339, "" for never
	}{
		{name: "no windows: always", now: "2026-11-20T03:00:00Z", wantActive: true},
		{name: "inside a daily window", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00")},
			now: "2026-11-20T10:00:00Z", wantActive: true, wantWindow: "09:00", wantNext: "2026-11-20T18:00:00Z"},
		{name: "start is inclusive", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00")},
			now: "2026-11-20T09:00:00Z", wantActive: true, wantWindow: "09:00", wantNext: "2026-11-20T18:00:00Z"},
		{name: "end is exclusive", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00")},
			now: "2026-11-20T18:00:00Z", wantNext: "2026-11-21T09:00:00Z"},
		{name: "before a window", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00")},
			now: "2026-11-20T08:59:59Z", wantNext: "2026-11-20T09:00:00Z"},
		{name: "weekdays only, friday evening waits for monday", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00", weekdays...)},
			now: "2026-11-20T19:00:00Z", wantNext: "2026-11-23T09:00:00Z"},
		{name: "crossing midnight, after start", windows: []kubeoceanv1alpha1.TimeWindow{tw("22:00", "06:00", "friday")},
			now: "2026-11-20T23:00:00Z", wantActive: true, wantWindow: "22:00", wantNext: "2026-11-21T06:00:00Z"},
		{name: "crossing midnight belongs to the day it opens", windows: []kubeoceanv1alpha1.TimeWindow{tw("22:00", "06:00", "friday")},
			now: "2026-11-21T03:00:00Z", wantActive: true, wantWindow: "22:00", wantNext: "2026-11-21T06:00:00Z"},
		{name: "crossing midnight, not opened on saturday", windows: []kubeoceanv1alpha1.TimeWindow{tw("22:00", "06:00", "friday")},
			now: "2026-11-21T23:00:00Z", wantNext: "2026-11-27T22:00:00Z"},
		{name: "thursday night window still open friday morning", windows: []kubeoceanv1alpha1.TimeWindow{tw("22:00", "06:00", "thursday")},
			now: "2026-11-20T05:59:00Z", wantActive: true, wantWindow: "22:00", wantNext: "2026-11-20T06:00:00Z"},
		{name: "whole day when start equals end", windows: []kubeoceanv1alpha1.TimeWindow{tw("00:00", "00:00", "saturday", "sunday")},
			now: "2026-11-22T23:59:00Z", wantActive: true, wantWindow: "00:00", wantNext: "2026-11-23T00:00:00Z"},
		{name: "every day all day never changes", windows: []kubeoceanv1alpha1.TimeWindow{tw("00:00", "00:00")},
			now: "2026-11-22T12:00:00Z", wantActive: true, wantWindow: "00:00"},
		{name: "adjacent windows merge", windows: []kubeoceanv1alpha1.TimeWindow{tw("08:00", "12:00"), tw("12:00", "17:00")},
			now: "2026-11-20T11:00:00Z", wantActive: true, wantWindow: "08:00", wantNext: "2026-11-20T17:00:00Z"},
		{name: "overlapping windows report the first", windows: []kubeoceanv1alpha1.TimeWindow{tw("08:00", "12:00"), tw("10:00", "14:00")},
			now: "2026-11-20T13:00:00Z", wantActive: true, wantWindow: "10:00", wantNext: "2026-11-20T14:00:00Z"},
		{name: "time zone shifts the window", windows: []kubeoceanv1alpha1.TimeWindow{tw("09:00", "18:00")}, timeZone: "Asia/Shanghai",
			now: "2026-11-20T01:00:00Z", wantActive: true, wantWindow: "09:00", wantNext: "2026-11-20T10:00:00Z"},
		{name: "time zone changes the day", windows: []kubeoceanv1alpha1.TimeWindow{tw("00:00", "02:00", "saturday")}, timeZone: "Asia/Tokyo",
			now: "2026-11-20T15:30:00Z", wantActive: true, wantWindow: "00:00", wantNext: "2026-11-20T17:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.windows, tt.timeZone)
			if err != nil {
				t.Fatal(err)
			}
			got := s.At(mustParse(t, tt.now))
			if got.Active != tt.wantActive {
				t.Errorf("Active = %v, want %v", got.Active, tt.wantActive)
			}
			switch {
			case tt.wantWindow == "" && got.Window != nil:
				t.Errorf("Window = %+v, want none", *got.Window)
			case tt.wantWindow != "" && (got.Window == nil || got.Window.Start != tt.wantWindow):
				t.Errorf("Window = %+v, want one starting %s", got.Window, tt.wantWindow)
			}
			var wantNext time.Time
			if tt.wantNext != "" {
				wantNext = mustParse(t, tt.wantNext)
			}
			if !got.NextTransition.Equal(wantNext) {
				t.Errorf("NextTransition = %v, want %v", got.NextTransition.UTC(), wantNext)
			}
		})
	}
}

// In America/New_York the clocks jump from 02:00 to 03:00 on 2026-03-08 and
// fall back from 02:00 to 01:00 on 2026-11-01.
func TestScheduleDaylightSaving(t *testing.T) {
	tests := []struct {
		name       string
		window     kubeoceanv1alpha1.TimeWindow
		day        string // a UTC instant just before the window's day starts in New York
		wantOpens  string
		wantCloses string
	}{
		{name: "spring forward: 01:00-04:00 lasts two hours", window: tw("01:00", "04:00"),
			day: "2026-03-08T04:00:00Z", wantOpens: "2026-03-08T06:00:00Z", wantCloses: "2026-03-08T08:00:00Z"},
		{name: "spring forward: a skipped start opens at the jump", window: tw("02:30", "05:00"),
			day: "2026-03-08T04:00:00Z", wantOpens: "2026-03-08T07:00:00Z", wantCloses: "2026-03-08T09:00:00Z"},
		{name: "spring forward: a skipped end closes at the jump", window: tw("23:00", "02:30", "saturday"),
			day: "2026-03-08T03:30:00Z", wantOpens: "2026-03-08T04:00:00Z", wantCloses: "2026-03-08T07:00:00Z"},
		{name: "fall back: 01:00-04:00 lasts four hours", window: tw("01:00", "04:00"),
			day: "2026-11-01T04:00:00Z", wantOpens: "2026-11-01T05:00:00Z", wantCloses: "2026-11-01T09:00:00Z"},
		{name: "fall back: a repeated time means its first occurrence", window: tw("01:30", "03:00"),
			day: "2026-11-01T04:00:00Z", wantOpens: "2026-11-01T05:30:00Z", wantCloses: "2026-11-01T08:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New([]kubeoceanv1alpha1.TimeWindow{tt.window}, "America/New_York")
			if err != nil {
				t.Fatal(err)
			}
			before := s.At(mustParse(t, tt.day))
			if before.Active {
				t.Fatalf("active at %s, want closed", tt.day)
			}
			opens := before.NextTransition
			if want := mustParse(t, tt.wantOpens); !opens.Equal(want) {
				t.Fatalf("opens at %v, want %v", opens.UTC(), want)
			}
			during := s.At(opens)
			if !during.Active {
				t.Fatalf("not active at its opening %v", opens.UTC())
			}
			if want := mustParse(t, tt.wantCloses); !during.NextTransition.Equal(want) {
				t.Fatalf("closes at %v, want %v", during.NextTransition.UTC(), want)
			}
			if s.At(during.NextTransition).Active {
				t.Fatalf("still active at its closing %v", during.NextTransition.UTC())
			}
		})
	}
}

// Walking the schedule boundary by boundary for a few weeks must agree with
// sampling it minute by minute: no missed and no spurious transitions.
func TestNextTransitionAgreesWithSampling(t *testing.T) {
	s, err := New([]kubeoceanv1alpha1.TimeWindow{
		tw("22:00", "06:00", "friday", "saturday"),
		tw("12:00", "13:30", "monday", "wednesday"),
		tw("13:00", "14:00", "wednesday"),
	}, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Covers the end of daylight saving time in Berlin (2026-10-25).
	start := mustParse(t, "2026-10-15T00:00:00Z")
	end := start.Add(21 * 24 * time.Hour)
	state := s.At(start)
	for now := start; now.Before(end); now = now.Add(time.Minute) {
		if !state.NextTransition.IsZero() && !now.Before(state.NextTransition) {
			next := s.At(now)
			if next.Active == state.Active {
				t.Fatalf("transition at %v does not change the state", now.UTC())
			}
			state = next
		}
		if got := s.At(now).Active; got != state.Active {
			t.Fatalf("at %v active = %v, but the last transition said %v", now.UTC(), got, state.Active)
		}
	}
}

// Policies written for the public Kubeocean name days in any case.
func TestParseDayInAnyCase(t *testing.T) {
	tests := []struct {
		in   kubeoceanv1alpha1.DayOfWeek
		want time.Weekday
		ok   bool
	}{
		{in: "monday", want: time.Monday, ok: true},
		{in: "Monday", want: time.Monday, ok: true},
		{in: "MONDAY", want: time.Monday, ok: true},
		{in: "sUnDaY", want: time.Sunday, ok: true},
		{in: "Saturday", want: time.Saturday, ok: true},
		{in: "mon"},
		{in: " monday"},
		{in: ""},
		{in: "\u017funday"}, // long s: folds to "s" in Unicode, not in ASCII
		{in: "\u212aonday"}, // Kelvin sign
	}
	for _, tt := range tests {
		got, ok := ParseDay(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseDay(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// A schedule built from capitalised names opens on those days.
	s, err := New([]kubeoceanv1alpha1.TimeWindow{tw("09:00", "17:00", "Friday", "SATURDAY")}, "UTC")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	friday := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for day, want := range map[time.Time]bool{friday: true, friday.AddDate(0, 0, 1): true, friday.AddDate(0, 0, 2): false} {
		if got := s.At(day).Active; got != want {
			t.Errorf("At(%s).Active = %v, want %v", day.Weekday(), got, want)
		}
	}
}
