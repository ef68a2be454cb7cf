"""The cron library KubeRay schedules with, reimplemented: ``github.com/robfig/cron/v3`` v3.0.1.

KubeRay v1.7.0 parses ``spec.schedule`` with ``cron.ParseStandard`` (validation.go:979, and
again with the time zone prefixed in raycronjob_controller.go:93, 210-217) and asks the
schedule for its next activation with ``Schedule.Next`` (raycronjob_controller.go:108, 133).
This module follows that library's parser (parser.go:88-153 ``Parse``, 160-215
``normalizeFields``, 236-357 ``getField``/``getRange``, 365-434 ``parseDescriptor``) and its two
schedules (spec.go:58-188 ``SpecSchedule.Next``/``dayMatches``; constantdelay.go:202-215
``Every``), so the analysis can say which schedules KubeRay rejects, which never fire, and
how many runs a window of time holds.

Times are whole Unix seconds, computed in UTC with plain integer calendar arithmetic (the
core does no I/O, so it reads no time zone database): a schedule's *count* of activations in
a window does not depend on the zone's offset, only daylight-saving days differ by an hour.
Citations of this module are to that library's files at v3.0.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from diffing.kube.names import go_atoi, go_duration_ns

STAR_BIT = 1 << 63  # spec.go:51-54: set when a field was written with * or ?


class CronError(ValueError):
    """A schedule ``cron.ParseStandard`` rejects; the message is the library's."""


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: tuple[tuple[str, int], ...] = ()


# spec.go:21-49
_SECONDS = _Bounds(0, 59)
_MINUTES = _Bounds(0, 59)
_HOURS = _Bounds(0, 23)
_DOM = _Bounds(1, 31)
_MONTHS = _Bounds(1, 12, tuple((n, i + 1) for i, n in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))))
_DOW = _Bounds(0, 6, tuple((n, i) for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))))


@dataclass(frozen=True, slots=True)
class SpecSchedule:
    """A crontab line as bit sets (spec.go:7-12)."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int


@dataclass(frozen=True, slots=True)
class Every:
    """``@every <duration>`` (constantdelay.go:195-209): whole seconds, at least one."""

    seconds: int


Schedule = SpecSchedule | Every


# -- parsing -----------------------------------------------------------------------------------


def parse_standard(spec: str) -> Schedule:
    """``cron.ParseStandard``: five fields (minute hour day-of-month month day-of-week) or a
    descriptor (parser.go:217-231). Raises :class:`CronError`.

    A ``TZ=``/``CRON_TZ=`` prefix is not handled: KubeRay rejects any schedule containing
    ``TZ`` before parsing it (validation.go:976-978).
    """
    if not spec:
        raise CronError("empty spec string")  # parser.go:89-91
    if spec.startswith("@"):
        return _descriptor(spec)  # parser.go:106-111
    fields = spec.split()  # strings.Fields
    if len(fields) != 5:  # parser.go:184-190 (no optional field in the standard parser)
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    minute = _field(fields[0], _MINUTES)
    hour = _field(fields[1], _HOURS)
    dom = _field(fields[2], _DOM)
    month = _field(fields[3], _MONTHS)
    dow = _field(fields[4], _DOW)
    # The standard parser has no seconds field: its default "0" (parser.go:38-45, 204-213).
    return SpecSchedule(1 << 0, minute, hour, dom, month, dow)


def _field(text: str, bounds: _Bounds) -> int:
    """parser.go:236-247 ``getField``: a comma-separated list of ranges (empty pieces dropped)."""
    bits = 0
    for expr in (p for p in text.split(",") if p):
        bits |= _range(expr, bounds)
    return bits


def _range(expr: str, b: _Bounds) -> int:
    """parser.go:252-318 ``getRange``: ``*``, ``?``, ``N``, ``N-M``, each with an optional ``/step``."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    single = len(low_high) == 1
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = b.low, b.high, STAR_BIT
    else:
        start = _int_or_name(low_high[0], b)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], b)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_int(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = b.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < b.low:
        raise CronError(f"beginning of range ({start}) below minimum ({b.low}): {expr}")
    if end > b.high:
        raise CronError(f"end of range ({end}) above maximum ({b.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _int_or_name(text: str, b: _Bounds) -> int:
    """parser.go:321-328: month and weekday names, in any case, else an integer."""
    for name, value in b.names:
        if text.lower() == name:
            return value
    return _must_int(text)


def _must_int(text: str) -> int:
    """parser.go:331-341: ``strconv.Atoi`` (int64), then no negative numbers."""
    num = go_atoi(text)
    if num is None or not -(1 << 63) <= num < (1 << 63):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {text}")
    return num


def _descriptor(spec: str) -> Schedule:
    """parser.go:365-434 ``parseDescriptor``: the names match exactly (no trimming)."""
    every_day = _all(_DOM)
    if spec in ("@yearly", "@annually"):
        return SpecSchedule(1, 1, 1, 1 << 1, 1 << 1, _all(_DOW))
    if spec == "@monthly":
        return SpecSchedule(1, 1, 1, 1 << 1, _all(_MONTHS), _all(_DOW))
    if spec == "@weekly":
        return SpecSchedule(1, 1, 1, every_day, _all(_MONTHS), 1 << 0)
    if spec in ("@daily", "@midnight"):
        return SpecSchedule(1, 1, 1, every_day, _all(_MONTHS), _all(_DOW))
    if spec == "@hourly":
        return SpecSchedule(1, 1, _all(_HOURS), every_day, _all(_MONTHS), _all(_DOW))
    if spec.startswith("@every "):
        text = spec[len("@every "):]
        ns = go_duration_ns(text)
        if ns is None:
            raise CronError(f'failed to parse duration {spec}: time: invalid duration "{text}"')
        # constantdelay.go:202-209: below a second becomes a second; fractions of one are dropped.
        return Every(max(ns, 10**9) // 10**9)
    raise CronError(f"unrecognized descriptor: {spec}")


def _all(b: _Bounds) -> int:
    bits = 0
    for i in range(b.low, b.high + 1):
        bits |= 1 << i
    return bits | STAR_BIT


# -- the calendar (proleptic Gregorian, as Go's time package) --------------------------------


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a valid date."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


@dataclass(frozen=True, slots=True)
class _Wall:
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int  # 0 = Sunday


def _wall(t: int) -> _Wall:
    days, rest = divmod(t, 86400)
    y, m, d = civil_from_days(days)
    return _Wall(y, m, d, rest // 3600, rest // 60 % 60, rest % 60, (days + 4) % 7)


def date(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0) -> int:
    """``time.Date`` in UTC: out-of-range months and days roll over, as Go normalises them."""
    y += (m - 1) // 12
    m = (m - 1) % 12 + 1
    return (days_from_civil(y, m, 1) + d - 1) * 86400 + hh * 3600 + mm * 60 + ss


# -- the next activation -----------------------------------------------------------------------


def next_after(schedule: Schedule, t: int) -> int | None:
    """``Schedule.Next(t)``: the first activation strictly after ``t``; ``None`` for Go's zero
    time, which ``SpecSchedule.Next`` returns when nothing matches within five years
    (spec.go:87-93)."""
    if isinstance(schedule, Every):
        return t + schedule.seconds  # constantdelay.go:213-215
    return _spec_next(schedule, t)


def _day_matches(s: SpecSchedule, w: _Wall) -> bool:
    """spec.go:179-188: with a * in either day field both must match, else either may."""
    dom = (1 << w.day) & s.dom > 0
    dow = (1 << w.weekday) & s.dow > 0
    if s.dom & STAR_BIT or s.dow & STAR_BIT:
        return dom and dow
    return dom or dow


def _next_bit(bits: int, current: int, limit: int) -> int:
    """The first set bit after ``current`` below ``limit``, else ``limit`` (the wrap)."""
    for i in range(current + 1, limit):
        if (1 << i) & bits:
            return i
    return limit


def _never(s: SpecSchedule) -> bool:
    """A field that matches nothing (``,`` parses to no bits): ``Next`` would walk five years."""
    dom, dow = s.dom & ~STAR_BIT, s.dow & ~STAR_BIT
    days = (dom and dow) if (s.dom & STAR_BIT or s.dow & STAR_BIT) else (dom or dow)
    return not (s.second and s.minute & ~STAR_BIT and s.hour & ~STAR_BIT and s.month & ~STAR_BIT and days)


def _spec_next(s: SpecSchedule, t: int) -> int | None:  # noqa: C901 - spec.go:58-175, step by step
    if _never(s):
        return None
    t += 1  # the upcoming second (spec.go:81-82; times here are whole seconds)
    added = False
    year_limit = _wall(t).year + 5
    while True:  # WRAP
        w = _wall(t)
        if w.year > year_limit:
            return None
        wrapped = False
        while not (1 << w.month) & s.month:
            if not added:
                added = True
                t = date(w.year, w.month, 1)
                w = _wall(t)
            t = date(w.year, w.month + 1, w.day, w.hour, w.minute, w.second)  # AddDate(0, 1, 0)
            w = _wall(t)
            if w.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(s, w):
            if not added:
                added = True
                t = date(w.year, w.month, w.day)
                w = _wall(t)
            t = date(w.year, w.month, w.day + 1, w.hour, w.minute, w.second)  # AddDate(0, 0, 1)
            w = _wall(t)
            if w.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        # The hour, minute and second loops add one unit at a time until a match or a wrap to 0;
        # jumping straight to the next set bit gives the same time (UTC has no gaps).
        if not (1 << w.hour) & s.hour:
            if not added:
                added = True
                t = date(w.year, w.month, w.day, w.hour)
            t += 3600 * (_next_bit(s.hour, w.hour, 24) - w.hour)
            w = _wall(t)
            if w.hour == 0:
                continue
        if not (1 << w.minute) & s.minute:
            if not added:
                added = True
                t -= w.second  # Truncate(time.Minute)
            t += 60 * (_next_bit(s.minute, w.minute, 60) - w.minute)
            w = _wall(t)
            if w.minute == 0:
                continue
        if not (1 << w.second) & s.second:
            added = True
            t += _next_bit(s.second, w.second, 60) - w.second
            w = _wall(t)
            if w.second == 0:
                continue
        return t


# -- what a schedule means for the runs ---------------------------------------------------------

# The analysis has no clock: windows are sampled from a fixed instant, 2026-01-01T00:00:00Z.
REFERENCE = date(2026, 1, 1)
SAMPLE_TICKS = 5000
SAMPLE_SECONDS = 8 * 366 * 86400


@dataclass(frozen=True, slots=True)
class Sample:
    """The activations of a schedule after :data:`REFERENCE`, at most :data:`SAMPLE_TICKS` of
    them within :data:`SAMPLE_SECONDS`; ``full`` when the span, not the count, ended it.

    ``jobs`` keeps the first activation of each minute: a RayJob is named after the minute of
    its activation (raycronjob_controller.go:160-168), so a second activation within the same
    minute meets the first one's RayJob, and KubeRay takes the AlreadyExists as done
    (raycronjob_controller.go:119-129). Runs are counted on ``jobs``.
    """

    ticks: tuple[int, ...]
    full: bool

    @property
    def never(self) -> bool:
        return not self.ticks

    @property
    def jobs(self) -> tuple[int, ...]:
        out: list[int] = []
        for t in self.ticks:
            if not out or t // 60 != out[-1] // 60:
                out.append(t)
        return tuple(out)

    def shortest_gap(self) -> int | None:
        """The shortest time between two RayJobs."""
        jobs = self.jobs
        gaps = [b - a for a, b in zip(jobs, jobs[1:], strict=False)]
        return min(gaps) if gaps else None

    def longest_gap(self) -> int | None:
        """The longest time between two activations."""
        gaps = [b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)]
        return max(gaps) if gaps else None

    def most_in_window(self, length: int) -> tuple[int, bool]:
        """The most RayJobs created within any window ``[t, t + length)`` that starts at one, and
        whether that is only a lower bound: the sample ran out of activations before one whole
        window fitted (a window reaching past a cut sample only repeats the ones before it)."""
        jobs, best, j = self.jobs, 0, 0
        for i, start in enumerate(jobs):
            j = max(j, i)
            while j < len(jobs) and jobs[j] < start + length:
                j += 1
            best = max(best, j - i)
            if j == len(jobs):
                return best, i == 0 and not self.full
        return best, False


@lru_cache(maxsize=64)
def sample(schedule: Schedule) -> Sample:
    ticks: list[int] = []
    t: int | None = REFERENCE
    while len(ticks) < SAMPLE_TICKS:
        assert t is not None
        t = next_after(schedule, t)
        if t is None or t - REFERENCE > SAMPLE_SECONDS:
            return Sample(tuple(ticks), True)
        ticks.append(t)
    return Sample(tuple(ticks), False)


def duration_text(seconds: int) -> str:
    """``90`` → ``1m30s``, Go's way of printing a duration (whole seconds)."""
    if seconds % 86400 == 0 and seconds >= 86400:
        days = seconds // 86400
        return f"{days} day{'s' if days > 1 else ''}"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or not (h or m) else "")
