/*
 * fuzz_yaml_guard.h - shared by the config and kubeconfig fuzz harnesses: the
 * loaders read every file a YAML scalar names, so before handing fuzzed YAML to
 * them the harness parses it with the same libyaml call and refuses inputs with
 * a scalar that could name a file outside the harness's temp dir.
 */
#ifndef AB_FUZZ_YAML_GUARD_H
#define AB_FUZZ_YAML_GUARD_H

#include <stddef.h>

/*
 * 1 when some scalar of the first YAML document in data[0..len) starts with
 * '/' or '~' or contains ".." (NUL bytes and escapes included: libyaml's own
 * reading), so that a path resolved against a temp dir could leave it; 0 when
 * every scalar is safe or the document does not load (the loaders then fail
 * before they read anything).
 */
int fuzz_yaml_names_outside(const char *data, size_t len);

#endif
