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
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// clock is a wall-clock time of day in minutes after midnight.
type clock int

// ParseClock parses a time of day written HH:MM, 00:00 to 23:59, and returns
// the minutes after midnight.
func ParseClock(s string) (int, error) {
	var hours, minutes int
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", s)
	}
	for i, c := range []byte(s) {
		if i != 2 && (c < '0' || c > '9') {
			return 0, fmt.Errorf("%q is not a time of day HH:MM", s)
		}
	}
	hours = int(s[0]-'0')*10 + int(s[1]-'0')
	minutes = int(s[3]-'0')*10 + int(s[4]-'0')
	if hours > 23 || minutes > 59 {
		return 0, fmt.Errorf("%q is not between 00:00 and 23:59", s)
	}
	return hours*60 + minutes, nil
}

// parseClockValue is ParseClock typed as a clock.
func parseClockValue(s string) (clock, error) {
	m, err := ParseClock(s)
	return clock(m), err
}

var dayNames = map[kubeoceanv1alpha1.DayOfWeek]time.Weekday{
	kubeoceanv1alpha1.Monday:    time.Monday,
	kubeoceanv1alpha1.Tuesday:   time.Tuesday,
	kubeoceanv1alpha1.Wednesday: time.Wednesday,
	kubeoceanv1alpha1.Thursday:  time.Thursday,
	kubeoceanv1alpha1.Friday:    time.Friday,
	kubeoceanv1alpha1.Saturday:  time.Saturday,
	kubeoceanv1alpha1.Sunday:    time.Sunday,
}

// ParseDay maps an API day name to a time.Weekday. Names are read in any
// case ("monday", "Monday", "MONDAY"), as policies written for the public
// Kubeocean use them; only ASCII letters are folded, as the CRD's CEL rule
// (lowerAscii) does, so the two accept exactly the same names.
func ParseDay(day kubeoceanv1alpha1.DayOfWeek) (time.Weekday, bool) {
	weekday, ok := dayNames[kubeoceanv1alpha1.DayOfWeek(lowerASCII(string(day)))]
	return weekday, ok
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// date is a calendar day, free of any time zone.
type date struct {
	year  int
	month time.Month
	day   int
}

func dateOf(t time.Time) date {
	y, m, d := t.Date()
	return date{y, m, d}
}

func (d date) addDays(n int) date {
	return dateOf(time.Date(d.year, d.month, d.day+n, 12, 0, 0, 0, time.UTC))
}

func (d date) weekday() time.Weekday {
	return time.Date(d.year, d.month, d.day, 12, 0, 0, 0, time.UTC).Weekday()
}

// at returns the instant the wall clock in location shows c on day d. A time
// skipped by a daylight-saving jump maps to the instant of the jump; a time
// that happens twice maps to its first occurrence.
func (d date) at(c clock, location *time.Location) time.Time {
	hour, minute := int(c)/60, int(c)%60
	t := time.Date(d.year, d.month, d.day, hour, minute, 0, 0, location)
	if t.Hour() != hour || t.Minute() != minute {
		// Skipped: Go normalised it to one side of the jump.
		zoneStart, zoneEnd := t.ZoneBounds()
		if t.Hour()*60+t.Minute() > int(c) {
			return zoneStart
		}
		return zoneEnd
	}
	return firstOccurrence(t)
}

// firstOccurrence returns the earlier instant showing the same wall-clock
// time as t when the clock was turned back just before t.
func firstOccurrence(t time.Time) time.Time {
	zoneStart, _ := t.ZoneBounds()
	if zoneStart.IsZero() {
		return t
	}
	_, offsetNow := t.Zone()
	_, offsetBefore := zoneStart.Add(-time.Second).Zone()
	if offsetBefore <= offsetNow {
		return t
	}
	earlier := t.Add(-time.Duration(offsetBefore-offsetNow) * time.Second)
	if earlier.Before(zoneStart) && earlier.Hour() == t.Hour() && earlier.Minute() == t.Minute() {
		return earlier
	}
	return t
}
