// Command winmedian is a Sluice window function (kind: window): when a
// key's window fires, it emits one record with the key and the median of
// the window's values, each a decimal integer (an optional '-', then
// digits, within int64), as decimal text: the middle value once sorted,
// the upper one of the two middle values for an even count. A value that
// is not an integer dead-letters the whole window: a median without it
// would be wrong.
//
// Build: sluice plugin build plugins/winmedian
package main
