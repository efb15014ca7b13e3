/* ssh/conn.c: see ssh/conn.h. */
#include "ssh/conn.h"

#include <libssh/callbacks.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static char *fingerprint(ssh_session s)
{
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *fp = NULL;

	if (ssh_get_server_publickey(s, &key) == SSH_OK &&
	    ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
				   &hlen) == SSH_OK)
		fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash,
					      hlen);
	ssh_clean_pubkey_hash(&hash);
	ssh_key_free(key);
	return fp;
}

static char *check_host_key(ssh_session s, const char *name,
			    enum hl_host_key_policy pol)
{
	enum ssh_known_hosts_e st;
	char *fp, *file = NULL, *err = NULL;

	if (pol == HL_HOSTKEY_NO)
		return NULL;
	st = ssh_session_is_known_server(s);
	fp = fingerprint(s);
	ssh_options_get(s, SSH_OPTIONS_KNOWNHOSTS, &file);
	switch (st) {
	case SSH_KNOWN_HOSTS_OK:
		break;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		err = hl_asprintf(
			"host '%s': the host key has changed (now %s); refusing to connect: if the change is expected, remove the host from %s",
			name, fp ? fp : "?", file ? file : "known_hosts");
		break;
	case SSH_KNOWN_HOSTS_NOT_FOUND:
	case SSH_KNOWN_HOSTS_UNKNOWN:
		if (pol == HL_HOSTKEY_YES) {
			err = hl_asprintf(
				"host '%s' is not in %s (key %s) and host key checking is 'yes'",
				name, file ? file : "known_hosts",
				fp ? fp : "?");
			break;
		}
		if (ssh_session_update_known_hosts(s) != SSH_OK)
			err = hl_asprintf(
				"host '%s': cannot record its key in %s: %s",
				name, file ? file : "known_hosts",
				ssh_get_error(s));
		break;
	default:
		err = hl_asprintf("host '%s': cannot check its host key: %s",
				  name, ssh_get_error(s));
		break;
	}
	ssh_string_free_char(fp);
	ssh_string_free_char(file);
	return err;
}

static char *set_options(ssh_session s, const struct hl_host *host,
			 const struct hl_ssh_opts *o)
{
	long timeout = o->connect_timeout_s;
	int nodelay = 1, port = host->port ? host->port : o->port;
	const char *user = host->user ? host->user : o->user;

	/* libssh logs per thread: this one's messages go where hvdrun's
	 * options say. */
	if (o->log != NULL)
		ssh_set_log_callback(o->log);
	/* The host first (the config's Host lines match it), then the
	 * config, then what the user set explicitly, which wins: libssh's
	 * config parser overrides options set before it. */
	if (ssh_options_set(s, SSH_OPTIONS_HOST, host->name) < 0)
		return hl_asprintf("host '%s': %s", host->name,
				   ssh_get_error(s));
	if (ssh_options_parse_config(s, o->config_file) < 0)
		return hl_asprintf("host '%s': cannot read the SSH config %s",
				   host->name,
				   o->config_file ? o->config_file : "");
	/* A LogLevel in the config quiets OpenSSH, but libssh takes it as
	 * its own verbosity: hvdrun's options decide instead. */
	if (ssh_options_set(s, SSH_OPTIONS_LOG_VERBOSITY, &o->log_level) < 0)
		return hl_asprintf("host '%s': %s", host->name,
				   ssh_get_error(s));
	if ((port && ssh_options_set(s, SSH_OPTIONS_PORT, &port) < 0) ||
	    (user && ssh_options_set(s, SSH_OPTIONS_USER, user) < 0) ||
	    (o->identity &&
	     ssh_options_set(s, SSH_OPTIONS_IDENTITY, o->identity) < 0) ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_NODELAY, &nodelay) < 0)
		return hl_asprintf("host '%s': %s", host->name,
				   ssh_get_error(s));
	return NULL;
}

int hl_ssh_connect(const struct hl_host *host, const struct hl_ssh_opts *o,
		   ssh_session *session, char **error)
{
	ssh_session s = ssh_new();
	char *user = NULL, *err = NULL;

	*session = NULL;
	*error = NULL;
	if (s == NULL) {
		*error = hl_asprintf("host '%s': out of memory", host->name);
		return HL_ENOMEM;
	}
	err = set_options(s, host, o);
	if (err == NULL && ssh_connect(s) != SSH_OK)
		err = hl_asprintf("cannot connect to host '%s': %s", host->name,
				  ssh_get_error(s));
	if (err == NULL)
		err = check_host_key(s, host->name, o->host_key_checking);
	/* The agent, the identity file, the default keys, in that order. */
	if (err == NULL &&
	    ssh_userauth_publickey_auto(s, NULL, NULL) != SSH_AUTH_SUCCESS) {
		ssh_options_get(s, SSH_OPTIONS_USER, &user);
		err = hl_asprintf(
			"cannot log in to host '%s' as '%s': no key was accepted (tried the ssh agent, the identity file and the default keys)",
			host->name, user ? user : "?");
		ssh_string_free_char(user);
	}
	if (err != NULL) {
		ssh_disconnect(s);
		ssh_free(s);
		*error = err;
		return HL_ESTART;
	}
	*session = s;
	return HL_OK;
}

char *hl_ssh_self_command(const char *agent_path, const char *mode,
			  const char *arg)
{
	char *path = hl_shell_quote(agent_path),
	     *qarg = arg ? hl_shell_quote(arg) : NULL;
	char *cmd = NULL;

	if (path != NULL && (arg == NULL || qarg != NULL))
		cmd = hl_asprintf(
			"test -x %s || { echo \"hvdrun: %s is not installed on this host\" >&2; exit 127; }; exec %s %s%s%s",
			path, path, path, mode, qarg ? " " : "",
			qarg ? qarg : "");
	free(path);
	free(qarg);
	return cmd;
}
