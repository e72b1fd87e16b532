#include "firstboot_install.h"

#include "configure.h"
#include "exec.h"
#include "firstboot.h"
#include "paths.h"
#include "url.h"

#include <crypt.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

#define KILN_BINARY_MAX (256u * 1024u * 1024u)
#define CA_MAX (1024u * 1024u)
#define ACCOUNT_FILE_MAX (4u * 1024u * 1024u)

static int write_target(const char *rel, const char *buf, size_t len, mode_t mode) {
        char p[PATH_MAX];
        int r = configure_target_path(rel, p);
        return r < 0 ? r : write_file_atomic_mode(p, buf, len, mode);
}

static bool target_has(const char *rel) {
        char p[PATH_MAX];
        return configure_target_path(rel, p) == 0 && access(p, X_OK) == 0;
}

/* 1 and the interpreter's path when the ELF image asks for one (a dynamic
 * build), 0 when it does not (static), -ENOEXEC when it is no 64-bit ELF. */
static int elf_interp(const char *buf, size_t len, char *interp, size_t interp_len) {
        Elf64_Ehdr eh;
        if (len < sizeof eh)
                return -ENOEXEC;
        memcpy(&eh, buf, sizeof eh);
        if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
            eh.e_phentsize < sizeof(Elf64_Phdr))
                return -ENOEXEC;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;
                uint64_t off = eh.e_phoff + (uint64_t) i * eh.e_phentsize;
                if (off > len || len - off < sizeof ph)
                        return -ENOEXEC;
                memcpy(&ph, buf + off, sizeof ph);
                if (ph.p_type != PT_INTERP)
                        continue;
                if (ph.p_filesz == 0 || ph.p_offset > len || len - ph.p_offset < ph.p_filesz)
                        return -ENOEXEC;
                snprintf(interp, interp_len, "%.*s", (int) strnlen(buf + ph.p_offset, ph.p_filesz), buf + ph.p_offset);
                return 1;
        }
        return 0;
}

int firstboot_install_binary(struct strbuf *warnings, struct strbuf *err) {
        _cleanup_free_ char *bin = NULL;
        size_t len = 0;
        char interp[256];
        int r = read_full_file(kiln_paths.self_exe, KILN_BINARY_MAX, &bin, &len);
        if (r < 0)
                return strbuf_addf(err, "cannot read kiln itself (%s)", kiln_paths.self_exe), r;
        r = elf_interp(bin, len, interp, sizeof interp);
        if (r < 0)
                return strbuf_addf(err, "kiln itself (%s) is not a 64-bit ELF executable", kiln_paths.self_exe), r;
        if (r > 0)
                (void) strbuf_addf(warnings, "this kiln is dynamically linked (interpreter %s): the installed system runs "
                                   "its copy %s at first boot only if it has the same libraries; the initramfs carries "
                                   "the static build, which runs anywhere\n", interp, FIRSTBOOT_BINARY);
        r = write_target(FIRSTBOOT_BINARY, bin, len, 0755);
        if (r < 0)
                return strbuf_addf(err, "%s", FIRSTBOOT_BINARY), r;
        return 0;
}

/* ---- the account ---- */

struct account {
        unsigned uid, gid;
        char *home;
};

static void account_done(struct account *a) {
        free(a->home);
}

/* The user's entry in the target's /etc/passwd (never the host's). */
static int passwd_lookup(const char *user, struct account *ret) {
        char p[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        int r = configure_target_path("/etc/passwd", p);
        if (r < 0 || (r = read_full_file(p, ACCOUNT_FILE_MAX, &text, NULL)) < 0)
                return r == -ENOENT ? -ESRCH : r;
        size_t ul = strlen(user);
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                if ((nl = strchr(line, '\n')))
                        *nl = 0;
                if (strncmp(line, user, ul) != 0 || line[ul] != ':')
                        continue;
                char *f[7] = {};
                size_t n = 0;
                for (char *s = line; n < 7; n++) {
                        f[n] = s;
                        char *c = strchr(s, ':');
                        if (!c) {
                                n++;
                                break;
                        }
                        *c = 0;
                        s = c + 1;
                }
                struct account a = {};
                if (n < 6 || safe_atou(f[2], &a.uid) < 0 || safe_atou(f[3], &a.gid) < 0 || f[5][0] != '/')
                        return -EBADMSG;
                if (!(a.home = strdup(f[5])))
                        return -ENOMEM;
                *ret = a;
                return 0;
        }
        return -ESRCH;
}

static int useradd(const char *user, struct strbuf *err) {
        if (!target_has(kiln_paths.t_useradd))
                return strbuf_addf(err, "the image has no %s to make the account '%s' CloudStack logs in with",
                                   kiln_paths.t_useradd, user), -ENOENT;
        const char *argv[] = { kiln_paths.t_useradd, "--create-home", "--user-group", "--shell",
                               target_has("/bin/bash") ? "/bin/bash" : "/bin/sh", "--", user, NULL };
        _cleanup_strbuf_ struct strbuf e = STRBUF_INIT;
        struct exec_options o = { .root = kiln_paths.target, .err = &e };
        int r = exec_argv(argv, &o, NULL);
        if (r < 0)
                return strbuf_addf(err, "useradd '%s' in %s: %s", user, kiln_paths.target, exec_last_line(&e)), r;
        return 0;
}

/* yescrypt, the hash Debian 12's own tools write (ENCRYPT_METHOD YESCRYPT). */
static int hash_password(const char *pw, char **ret) {
        char salt[CRYPT_GENSALT_OUTPUT_SIZE];
        if (!crypt_gensalt_rn("$y$", 0, NULL, 0, salt, sizeof salt))
                return errno > 0 ? -errno : -EINVAL;
        struct crypt_data *cd = calloc(1, sizeof *cd);
        if (!cd)
                return -ENOMEM;
        const char *h = crypt_rn(pw, salt, cd, sizeof *cd);
        int r = 0;
        if (!h || h[0] == '*')
                r = errno > 0 ? -errno : -EINVAL;
        else if (!(*ret = strdup(h)))
                r = -ENOMEM;
        explicit_wipe(cd, sizeof *cd);
        free(cd);
        return r;
}

/* The user's line of the target's /etc/shadow gets hash (and today as the
 * last change); a user without one gets a line. Mode and owner stay. */
static int shadow_set(const char *user, const char *hash, struct strbuf *err) {
        char p[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        struct stat st = { .st_mode = 0640 };
        int r = configure_target_path("/etc/shadow", p);
        if (r < 0)
                return r;
        r = read_full_file(p, ACCOUNT_FILE_MAX, &text, NULL);
        if (r < 0 && r != -ENOENT)
                return strbuf_adds(err, "/etc/shadow"), r;
        if (r == 0 && stat(p, &st) < 0)
                return strbuf_adds(err, "/etc/shadow"), -errno;
        unsigned long days = (unsigned long) (time(NULL) / 86400);
        size_t ul = strlen(user);
        bool done = false;
        r = 0;
        for (char *line = text, *nl; r == 0 && line && *line; line = nl ? nl + 1 : NULL) {
                if ((nl = strchr(line, '\n')))
                        *nl = 0;
                if (done || strncmp(line, user, ul) != 0 || line[ul] != ':') {
                        r = strbuf_addf(&out, "%s\n", line);
                        continue;
                }
                /* name:password:lastchg:rest -> name:HASH:DAYS:rest */
                char *c2 = strchr(line + ul + 1, ':'), *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
                r = strbuf_addf(&out, "%s:%s:%lu:%s\n", user, hash, days, c3 ? c3 + 1 : "0:99999:7:::");
                done = true;
        }
        if (r == 0 && !done)
                r = strbuf_addf(&out, "%s:%s:%lu:0:99999:7:::\n", user, hash, days);
        if (r == 0)
                r = write_file_atomic_mode(p, strbuf_str(&out), out.len, st.st_mode & 07777);
        if (r == 0 && chown(p, st.st_uid, st.st_gid) < 0)
                r = -errno;
        explicit_wipe(out.buf, out.alloc);
        if (text)
                explicit_wipe(text, strlen(text));
        if (r < 0)
                return strbuf_adds(err, "/etc/shadow"), r;
        return 0;
}

static int mkdir_owned(const char *path, mode_t mode, const struct account *a) {
        int r = mkdir_p(path);
        if (r < 0)
                return r;
        if (chmod(path, mode) < 0 || chown(path, a->uid, a->gid) < 0)
                return -errno;
        return 0;
}

/* key in ~user/.ssh/authorized_keys (kept lines stay), 0700/0600, the user's. */
static int authorized_key_add(const struct account *a, const char *key, struct strbuf *err) {
        char home[PATH_MAX], dir[PATH_MAX + 8], file[PATH_MAX + 32];
        int r = configure_target_path(a->home, home);
        if (r < 0)
                return r;
        snprintf(dir, sizeof dir, "%s/.ssh", home);
        snprintf(file, sizeof file, "%s/authorized_keys", dir);
        _cleanup_free_ char *old = NULL;
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        if ((r = mkdir_p(home)) < 0 || (r = mkdir_owned(dir, 0700, a)) < 0)
                return strbuf_addf(err, "%s/.ssh", a->home), r;
        r = read_full_file(file, ACCOUNT_FILE_MAX, &old, NULL);
        if (r < 0 && r != -ENOENT)
                return strbuf_addf(err, "%s/.ssh/authorized_keys", a->home), r;
        bool have = false;
        for (char *line = old, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                if ((nl = strchr(line, '\n')))
                        *nl = 0;
                have |= streq(line, key);
                if ((r = strbuf_addf(&out, "%s\n", line)) < 0)
                        return r;
        }
        if (!have && (r = strbuf_addf(&out, "%s\n", key)) < 0)
                return r;
        r = write_file_atomic_mode(file, strbuf_str(&out), out.len, 0600);
        if (r == 0 && chown(file, a->uid, a->gid) < 0)
                r = -errno;
        if (r < 0)
                return strbuf_addf(err, "%s/.ssh/authorized_keys", a->home), r;
        return 0;
}

/* sudo rights an earlier install gave (another spec's account) */
static int remove_old_sudoers(void) {
        char p[PATH_MAX];
        int r = configure_target_path(FIRSTBOOT_SUDOERS_DIR, p);
        if (r < 0)
                return r;
        _cleanup_closedir_ DIR *d = opendir(p);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        while ((de = readdir(d)))
                if (strncmp(de->d_name, "kiln-", 5) == 0 && unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

int firstboot_sshd_dropin(const struct spec_cloudstack *c, struct strbuf *out) {
        bool root = streq(c->host_username, "root"), pw = c->host_password, key = c->host_authorized_key;
        /* sshd takes the first value it reads, and Debian's sshd_config reads
         * sshd_config.d/ first: these lines win over the image's. */
        int r = strbuf_addf(out,
                            "# written by kiln: the one login CloudStack's management server uses for addHost\n"
                            "# (register.cloudstack of the host spec: host_username%s%s)\n"
                            "AllowUsers %s\n"
                            "PermitRootLogin %s\n"
                            "PasswordAuthentication %s\n"
                            "KbdInteractiveAuthentication no\n"
                            "PubkeyAuthentication %s\n",
                            pw ? ", host_password" : "", key ? ", host_authorized_key" : "", c->host_username,
                            root ? (pw ? "yes" : "prohibit-password") : "no", pw ? "yes" : "no", key ? "yes" : "no");
        return r < 0 ? r : 0;
}

static int install_account(const struct spec_cloudstack *c, struct strbuf *warnings, struct strbuf *err) {
        const char *user = c->host_username;
        _cleanup_(account_done) struct account a = {};
        bool made = false;
        int r = passwd_lookup(user, &a);
        if (r == -ESRCH) {
                if ((r = useradd(user, err)) < 0)
                        return r;
                made = true;
                r = passwd_lookup(user, &a);
        }
        if (r < 0)
                return strbuf_addf(err, "account '%s' in %s/etc/passwd", user, kiln_paths.target), r;
        if (c->host_password) {
                _cleanup_free_ char *hash = NULL;
                if ((r = hash_password(c->host_password, &hash)) < 0)
                        return strbuf_addf(err, "cannot hash the password of '%s' (yescrypt)", user), r;
                r = shadow_set(user, hash, err);
                explicit_wipe(hash, strlen(hash));
                if (r < 0)
                        return r;
        } else if (made && (r = shadow_set(user, "*", err)) < 0)
                /* no password, and not locked ('!', useradd's), which sshd would refuse without PAM */
                return r;
        if (c->host_authorized_key && (r = authorized_key_add(&a, c->host_authorized_key, err)) < 0)
                return r;
        if (!streq(user, "root")) {
                /* CloudStack's host setup runs its commands with sudo over SSH, with no terminal to ask on */
                _cleanup_free_ char *rel = strdupf("%s/kiln-%s", FIRSTBOOT_SUDOERS_DIR, user);
                _cleanup_free_ char *line = strdupf("# written by kiln: CloudStack's host setup runs sudo over SSH\n"
                                                    "%s ALL=(ALL:ALL) NOPASSWD: ALL\n", user);
                if (!rel || !line)
                        return -ENOMEM;
                if ((r = write_target(rel, line, strlen(line), 0440)) < 0)
                        return strbuf_adds(err, rel), r;
                if (!target_has(kiln_paths.t_sudo))
                        (void) strbuf_addf(warnings, "the image has no %s: CloudStack's host setup as '%s' needs it\n",
                                           kiln_paths.t_sudo, user);
        }
        _cleanup_strbuf_ struct strbuf d = STRBUF_INIT;
        if ((r = firstboot_sshd_dropin(c, &d)) < 0)
                return r;
        if ((r = write_target(FIRSTBOOT_SSHD_DROPIN, strbuf_str(&d), d.len, 0644)) < 0)
                return strbuf_adds(err, FIRSTBOOT_SSHD_DROPIN), r;
        if (!target_has(kiln_paths.t_sshd))
                (void) strbuf_addf(warnings, "the image has no %s: CloudStack's addHost logs in over SSH\n", kiln_paths.t_sshd);
        return 0;
}

int firstboot_install(const struct spec *spec, const struct firstboot_source *src, struct strbuf *warnings,
                      struct strbuf *err) {
        const struct spec_cloudstack *c = &spec->cloudstack;
        int r;
        if (!src->spec_url || !src->spec_sha256)
                return strbuf_adds(err, "no spec URL for the installed system to fetch again at first boot"), -EINVAL;
        char shown[URL_DISPLAY_MAX];
        if (!streq(url_display(src->spec_url, shown), src->spec_url))
                (void) strbuf_addf(warnings, "the spec URL carries a credential (user info or a query), which %s keeps "
                                   "(mode 0600) for the first boot's fetch\n", FIRSTBOOT_CONF);
        if ((r = firstboot_install_binary(warnings, err)) < 0)
                return r;
        if (src->ca_file) {
                _cleanup_free_ char *pem = NULL;
                size_t len = 0;
                if ((r = read_full_file(src->ca_file, CA_MAX, &pem, &len)) < 0)
                        return strbuf_addf(err, "the CA bundle '%s'", src->ca_file), r;
                if ((r = write_target(FIRSTBOOT_CA, pem, len, 0644)) < 0)
                        return strbuf_adds(err, FIRSTBOOT_CA), r;
        }
        struct firstboot_conf fc = {
                .spec_url = (char *) src->spec_url, .spec_sha256 = (char *) src->spec_sha256,
                .ca = src->ca_file ? (char *) FIRSTBOOT_CA : NULL, .report = (char *) FIRSTBOOT_REPORT,
                .marker = (char *) FIRSTBOOT_MARKER, .ip = (char *) src->ip,
        };
        _cleanup_strbuf_ struct strbuf conf = STRBUF_INIT, unit = STRBUF_INIT;
        if ((r = firstboot_conf_format(&fc, &conf)) < 0)
                return strbuf_addf(err, "%s (a value with a line break?)", FIRSTBOOT_CONF), r;
        if ((r = write_target(FIRSTBOOT_CONF, strbuf_str(&conf), conf.len, 0600)) < 0)
                return strbuf_adds(err, FIRSTBOOT_CONF), r;
        if ((r = firstboot_unit_text(&unit)) < 0)
                return r;
        if ((r = write_target(FIRSTBOOT_UNIT_PATH, strbuf_str(&unit), unit.len, 0644)) < 0)
                return strbuf_adds(err, FIRSTBOOT_UNIT_PATH), r;
        if ((r = configure_symlink(FIRSTBOOT_UNIT_PATH, FIRSTBOOT_WANTS_LINK)) < 0)
                return strbuf_adds(err, FIRSTBOOT_WANTS_LINK), r;
        /* a stale marker (an image that carries one, an earlier install) would keep the unit from running */
        char marker[PATH_MAX];
        if ((r = configure_target_path(FIRSTBOOT_MARKER, marker)) < 0)
                return r;
        if (unlink(marker) < 0 && errno != ENOENT)
                return strbuf_adds(err, FIRSTBOOT_MARKER), -errno;
        if ((r = remove_old_sudoers()) < 0)
                return strbuf_adds(err, FIRSTBOOT_SUDOERS_DIR), r;
        if (c->host_password || c->host_authorized_key)
                return install_account(c, warnings, err);
        return 0;
}
