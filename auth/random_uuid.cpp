#include "auth/random_uuid.hpp"

#include <uuid/uuid.h>

namespace det::auth {

std::string random_uuid() {
  uuid_t id;
  uuid_generate_random(id);
  char text[37];  // 36 characters and the terminator, as uuid_unparse(3) requires
  uuid_unparse_lower(id, text);
  return text;
}

}  // namespace det::auth
