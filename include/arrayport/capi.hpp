// The capi adapter lives in arrayport/bind/ with the other binding adapters; this path stays so
// that code written against it keeps building.
#pragma once

#include <arrayport/bind/capi.hpp>
