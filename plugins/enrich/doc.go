// Command enrich is a Sluice operator that filters and enriches records whose
// values are JSON objects. Its configuration:
//
//	config:
//	  require: [user, amount]     # drop records lacking any of these fields
//	  min: {amount: 10}           # drop records whose field is under the minimum
//	  set: {source: web, v: 2}    # add these fields, replacing any present
//
// A record passes when every required field is present and every field with
// a minimum holds a number at least that minimum (a field that is absent
// fails the minimum and drops the record). A passing record is emitted with
// the `set` fields applied: present fields keep their place and take the new
// value, the others are appended in the configuration's order. The rest of
// the object is kept byte for byte. Key, time and headers pass unchanged.
//
// A value that is not a JSON object, or a field under `min` that holds
// something other than a number, dead-letters the record with a message
// saying which.
//
// Build: sluice plugin build plugins/enrich
package main
