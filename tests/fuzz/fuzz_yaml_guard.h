/*
 * fuzz_yaml_guard.h - shared by the config and kubeconfig fuzz harnesses: the
 * loaders read every file a YAML scalar names, so each harness makes a temp dir
 * of files for them to read and, before handing fuzzed YAML to them, parses it
 * with the same libyaml call and refuses inputs with a scalar that could name a
 * file outside that dir.
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

/*
 * The harness's temp dir: made from the mkdtemp() template "/tmp/<prefix>.XXXXXX"
 * into dir (dir_size bytes), with each of the n files names[] in it holding text;
 * the files and the dir are removed at exit (atexit).  names must live until
 * exit (a static array).  One per process; aborts on any failure (the harness
 * cannot run without it).
 */
void fuzz_temp_dir(char *dir, size_t dir_size, const char *prefix, const char *const *names,
		   size_t n, const char *text);

#endif
