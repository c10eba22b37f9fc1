package sluice

import (
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// Level is the severity of a log message.
type Level int32

// Log levels, as the host's log records them.
const (
	LevelDebug = Level(abi.LogDebug)
	LevelInfo  = Level(abi.LogInfo)
	LevelWarn  = Level(abi.LogWarn)
	LevelError = Level(abi.LogError)
)

// String returns the level's name.
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "DEBUG"
	case LevelInfo:
		return "INFO"
	case LevelWarn:
		return "WARN"
	case LevelError:
		return "ERROR"
	}
	return fmt.Sprintf("Level(%d)", int32(l))
}

// Log writes msg to the host's log at level; the host adds the operator's
// name. In a native build it goes to the sluicetest harness that is running
// the operator, or to log/slog's default logger outside one.
//
// Logging is a host call per message: keep it off the per-record path, or
// guard it by a condition that is rare.
func Log(level Level, msg string) { logTo(level, msg) }

// Logf formats its arguments as fmt.Sprintf does and logs the result.
func Logf(level Level, format string, args ...any) {
	logTo(level, fmt.Sprintf(format, args...))
}
