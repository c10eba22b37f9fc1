package generator

// vocabulary holds the 200 words of "words" mode, most frequent first: the
// generator picks word i with a weight of 1/(i+1), so the first few words
// dominate as they do in English text. It is a constant, split when a
// generator is made, so that the package holds no mutable state.
const vocabulary = `
the of and to in is it you that was for on are with as they be at one have
this from or had by word but what some we can out other were all there when up
use your how said an each she which do their time if will way about many then
them write would like so these her long make thing see him two has look more
day could go come did number sound no most people my over know water than call
first who may down side been now find any new work part take get place made
live where after back little only round man year came show every good me give
our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set
three want air well also play small end put home read hand port large spell
add even land here must big high such follow act why ask men change went light
kind off need house picture try us again animal point mother world near build
self earth father head stand own page should
`
