/* c_translate: translates stdin, one sentence a line, with vkformer's C API.
 *
 *   c_translate [--validation] [--beam K] [--memory-limit-mib N] MODEL < input > output
 *
 * MODEL is a checkpoint file or a directory (its latest checkpoint). Exits 1 with vkformer's
 * message on any error, 3 when the validation layer reported anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vkformer/vkformer.h>

static int fail(const char* what, vkf_status status) {
  fprintf(stderr, "c_translate: %s: %s: %s\n", what, vkf_status_name(status), vkf_last_error());
  return 1;
}

/* Reads stdin into lines (without their newlines); returns the count, or -1 without memory. */
static long read_lines(char*** out) {
  size_t cap = 16, n = 0, len = 0, size = 256;
  char** lines = malloc(cap * sizeof *lines);
  char* buf = malloc(size);
  int c;
  if (!lines || !buf) return -1;
  for (;;) {
    c = getchar();
    if (c == EOF && len == 0) break;
    if (c == EOF || c == '\n') {
      if (len > 0 && buf[len - 1] == '\r') --len;
      if (n == cap) {
        char** grown = realloc(lines, (cap *= 2) * sizeof *lines);
        if (!grown) return -1;
        lines = grown;
      }
      lines[n] = malloc(len + 1);
      if (!lines[n]) return -1;
      memcpy(lines[n], buf, len);
      lines[n++][len] = '\0';
      len = 0;
      if (c == EOF) break;
      continue;
    }
    if (len + 1 >= size) {
      char* grown = realloc(buf, size *= 2);
      if (!grown) return -1;
      buf = grown;
    }
    buf[len++] = (char)c;
  }
  free(buf);
  *out = lines;
  return (long)n;
}

int main(int argc, char** argv) {
  vkf_device_options dopt;
  vkf_translator_options topt;
  vkf_device device = NULL;
  vkf_translator translator = NULL;
  const char* model = NULL;
  char** lines = NULL;
  char** out = NULL;
  long count = 0, i;
  vkf_status st;
  int rc = 0;

  vkf_device_options_init(&dopt);
  vkf_translator_options_init(&topt);
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--validation") == 0) {
      dopt.validation = 1;
    } else if (strcmp(argv[i], "--beam") == 0 && i + 1 < argc) {
      topt.beam = (uint32_t)strtoul(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--memory-limit-mib") == 0 && i + 1 < argc) {
      dopt.memory_limit_bytes = (uint64_t)strtoull(argv[++i], NULL, 10) << 20;
    } else if (argv[i][0] != '-' && model == NULL) {
      model = argv[i];
    } else {
      fprintf(stderr,
              "usage: c_translate [--validation] [--beam K] [--memory-limit-mib N] MODEL\n");
      return 2;
    }
  }
  if (model == NULL) {
    fprintf(stderr, "usage: c_translate [--validation] [--beam K] [--memory-limit-mib N] MODEL\n");
    return 2;
  }

  if ((st = vkf_device_create(&dopt, &device)) != VKF_OK) return fail("device", st);
  fprintf(stderr, "c_translate: vkformer %s on %s\n", vkf_version(), vkf_device_name(device));
  if ((st = vkf_translator_load(device, model, &topt, &translator)) != VKF_OK) {
    rc = fail("loading the model", st);
    goto done;
  }
  count = read_lines(&lines);
  if (count < 0) {
    fprintf(stderr, "c_translate: out of memory reading stdin\n");
    rc = 1;
    goto done;
  }
  if ((st = vkf_translate(translator, (const char* const*)lines, (size_t)count, &out)) != VKF_OK) {
    rc = fail("translating", st);
    goto done;
  }
  for (i = 0; i < count; ++i) printf("%s\n", out[i]);
  vkf_translations_free(out, (size_t)count);

done:
  for (i = 0; lines && i < count; ++i) free(lines[i]);
  free(lines);
  vkf_translator_free(translator);
  if (rc == 0 && dopt.validation && vkf_device_validation_count(device) > 0) {
    fprintf(stderr, "c_translate: the validation layer reported %zu messages\n",
            vkf_device_validation_count(device));
    rc = 3;
  }
  vkf_device_free(device); /* prints the validation messages, if any */
  return rc;
}
