// What every example's main() does after parsing its flags: run the body and
// turn an escaped error into one line "name: message" and exit code 1.
#pragma once

#include <exception>
#include <iostream>

namespace flotilla::examples {

template <typename Body>
int RunExample(const char* name, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace flotilla::examples
