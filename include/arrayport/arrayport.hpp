// The whole C++ core in one include (no Python): dtypes, errors, memory, containers, views,
// devices, streams and events.
#pragma once

#include <arrayport/buffer.hpp>
#include <arrayport/c/view.h>
#include <arrayport/config.hpp>
#include <arrayport/device.hpp>
#include <arrayport/dtype.hpp>
#include <arrayport/error.hpp>
#include <arrayport/event.hpp>
#include <arrayport/memory_kind.hpp>
#include <arrayport/memory_resource.hpp>
#include <arrayport/runtime.hpp>
#include <arrayport/stream.hpp>
#include <arrayport/vector.hpp>
#include <arrayport/version.h>
#include <arrayport/view.hpp>
