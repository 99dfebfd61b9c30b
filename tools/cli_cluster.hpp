#pragma once
// `det agent list` (`det a`), `det slot list` (`det s`) and `det master info`.

namespace det::tools {

class rest_client;

int list_agents(rest_client& master, bool json);

/// Every slot of every agent; `json` prints a GetSlotsResponse.
int list_slots(rest_client& master, bool json);

int print_master_info(rest_client& master, bool json);

} // namespace det::tools
