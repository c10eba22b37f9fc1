// Command wordsplit is a Sluice FlatMap operator that splits each record's
// value into words and emits one record per word, with the word, lower-cased,
// as both key and value, and the input's time. A word is a run of Unicode
// letters and digits; combining marks that follow a letter or digit belong to
// the word ("café" written with a combining accent stays one word).
// Anything else separates words, invalid UTF-8 included.
//
// Build: sluice plugin build plugins/wordsplit
package main
