package chattmpl

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t as Python's datetime.strftime does on glibc (C locale),
// including glibc's '-' (no padding) flag that templates use as "%-d".
// Llama 3.x templates call strftime_now("%d %b %Y").
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(v, width int) {
			if noPad {
				fmt.Fprintf(&b, "%d", v)
			} else {
				fmt.Fprintf(&b, "%0*d", width, v)
			}
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			if noPad {
				fmt.Fprintf(&b, "%d", t.Day())
			} else {
				fmt.Fprintf(&b, "%2d", t.Day())
			}
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'm':
			num(int(t.Month()), 2)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'C':
			num(t.Year()/100, 2)
		case 'H':
			num(t.Hour(), 2)
		case 'k':
			fmt.Fprintf(&b, "%2d", t.Hour())
		case 'I':
			num(hour12, 2)
		case 'l':
			fmt.Fprintf(&b, "%2d", hour12)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Nanosecond()/1000)
		case 'j':
			num(t.YearDay(), 3)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			// datetime.now() is naive: Python prints nothing for %Z.
		case 's':
			fmt.Fprintf(&b, "%d", t.Unix())
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2)
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2)
		case 'V':
			_, w := t.ISOWeek()
			num(w, 2)
		case 'G':
			y, _ := t.ISOWeek()
			fmt.Fprintf(&b, "%d", y)
		case 'c':
			b.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'x', 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'X', 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			// glibc leaves unknown conversions as written.
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
