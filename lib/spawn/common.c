/* spawn/common.c: what every spawner shares with the supervisor: telling
 * it of an event (a worker started, exited, a host lost), and a remote
 * worker's environment. */
#include <stdlib.h>
#include <unistd.h>

#include "launch/launch.h"
#include "spawn/spawn.h"

int hl_spawn_remote_env(const struct hl_launch *l, const struct hl_worker *w,
			struct hl_strvec *env)
{
	struct hl_strvec fwd;
	int rc = hl_env_exported(environ, l->env, &fwd);

	if (rc == HL_OK) {
		rc = hl_env_build(fwd.v, l->env, &w->place, env);
		hl_strvec_close(&fwd);
	}
	return rc;
}

void hl_spawn_event(const struct hl_launch *l, const struct hl_event *ev)
{
	if (l->on_event != NULL)
		l->on_event(l->event_arg, ev);
}
