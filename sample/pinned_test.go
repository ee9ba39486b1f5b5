package sample

// pinnedSeq42 is the first tokens of TestDeterministic's seed-42 run,
// recorded when the sampler was written; a change means sampling is no
// longer reproducible across releases.
var pinnedSeq42 = []int{351, 81, 587, 566, 971, 944, 879, 276, 396, 869, 686, 268, 770, 7, 891, 609}
