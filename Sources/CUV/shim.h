#ifndef REACTOR_CUV_SHIM_H
#define REACTOR_CUV_SHIM_H

#include <uv.h>
#include <llhttp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

#endif
