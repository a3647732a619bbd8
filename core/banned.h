/*
 * banned.h - functions alertbridge does not use (git banned.h).
 *
 * Every .c file includes it after all other headers (system headers declare
 * these names); a use of one then fails to compile with a message that names
 * the replacement.
 */
#ifndef AB_BANNED_H
#define AB_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy_use_buf_or_snprintf)
#undef strcat
#define strcat(x, y) BANNED(strcat_use_buf)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy_use_snprintf)
#undef strncat
#define strncat(x, y, n) BANNED(strncat_use_buf)
#undef strtok
#define strtok(x, y) BANNED(strtok_use_strtok_r)
#undef sprintf
#define sprintf(...) BANNED(sprintf_use_snprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf_use_vsnprintf)
#undef gmtime
#define gmtime(t) BANNED(gmtime_use_gmtime_r)
#undef localtime
#define localtime(t) BANNED(localtime_use_localtime_r)
#undef ctime
#define ctime(t) BANNED(ctime_use_strftime)
#undef asctime
#define asctime(t) BANNED(asctime_use_strftime)
#undef atoi
#define atoi(x) BANNED(atoi_use_strtol_checked)
#undef atol
#define atol(x) BANNED(atol_use_strtol_checked)
#undef atoll
#define atoll(x) BANNED(atoll_use_strtoll_checked)

#endif
