/* The header compiles as strict C11, warning-free, and is safe to include twice. */
#include "agentstream.h"
#include "agentstream.h"

_Static_assert(sizeof(agentstream_status) == 4, "agentstream_status is a uint32_t");
_Static_assert(AGENTSTREAM_STATUS_OK == 0, "OK is 0");
_Static_assert(sizeof(agentstream_next) == 4, "agentstream_next is a uint32_t");

int main(void) {
    agentstream_status st = agentstream_channel_validate("content");
    agentstream_event_cb cb = 0;
    agentstream_free_cb fr = 0;
    (void)cb;
    (void)fr;
    return st == AGENTSTREAM_STATUS_OK ? 0 : 1;
}
