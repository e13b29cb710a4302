/* SPDX-License-Identifier: MIT */
/*
 * libward's ABI beyond its symbol list (tests/abi/check-abi.sh): the layout
 * of every public structure and the value of every public constant as
 * released in 0.1.0, checked at compile time. A change here breaks programs
 * built against libward.so.0: it needs a new soname, not an edit of this
 * file. (Until 0.1.0 is tagged the layout may still move: then this file
 * moves with it, in the same commit.) Compiled as C11 with -pedantic-errors (tests/abi/header.c) and, as
 * header-cxx.cc, as C++11: ward.h must be usable from both.
 */
#include <stddef.h>
#include <stdio.h>

#include <ward/ward.h>

#ifdef __cplusplus
#define ABI(cond) static_assert(cond, #cond)
#else
#define ABI(cond) _Static_assert(cond, #cond)
#endif
#define OFF(type, field, off) ABI(offsetof(struct type, field) == (off))

ABI(WARD_ERROR_MESSAGE_MAX == 512);
ABI(WARD_MODE_READ_ONLY == 0 && WARD_MODE_WORKSPACE_WRITE == 1 &&
    WARD_MODE_DANGER_FULL_ACCESS == 2);
ABI(WARD_ENV_INHERIT_ALL == 0 && WARD_ENV_INHERIT_CORE == 1 && WARD_ENV_INHERIT_NONE == 2);
ABI(WARD_STREAM_STDOUT == 1 && WARD_STREAM_STDERR == 2);
ABI(WARD_APPROVAL_ON_REQUEST == 0 && WARD_APPROVAL_UNTRUSTED == 1 && WARD_APPROVAL_NEVER == 2 &&
    WARD_APPROVAL_GRANULAR == 3);
ABI(WARD_REVIEW_APPROVED == 0 && WARD_REVIEW_APPROVED_FOR_SESSION == 1 &&
    WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT == 2 && WARD_REVIEW_DENIED == 3 &&
    WARD_REVIEW_ABORT == 4);
ABI(WARD_SANDBOX_PERMISSIONS_USE_DEFAULT == 0 && WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED == 1 &&
    WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS == 2);
ABI(WARD_APPROVAL_RAN_SANDBOXED == 0 && WARD_APPROVAL_RAN_UNSANDBOXED == 1 &&
    WARD_APPROVAL_REJECTED == 2 && WARD_APPROVAL_DENIED == 3 && WARD_APPROVAL_ABORTED == 4);

/* struct ward_error is embedded by callers: its size is part of the ABI everywhere. */
ABI(sizeof(struct ward_error) == 804);
OFF(ward_error, code, 0);
OFF(ward_error, stage, 4);
OFF(ward_error, message, 36);
OFF(ward_error, hint, 548);

ABI(sizeof(struct ward_approval_granular) == 5);
OFF(ward_approval_granular, sandbox_approval, 0);
OFF(ward_approval_granular, rules, 1);
OFF(ward_approval_granular, skill_approval, 2);
OFF(ward_approval_granular, request_permissions, 3);
OFF(ward_approval_granular, mcp_elicitations, 4);

/* The structures with pointers, as laid out on LP64 targets (x86-64, arm64). */
#if defined(__LP64__)
ABI(sizeof(struct ward_denial_info) == 40);
OFF(ward_denial_info, access, 0);
OFF(ward_denial_info, syscall, 8);
OFF(ward_denial_info, error, 16);
OFF(ward_denial_info, target, 24);
OFF(ward_denial_info, reason, 32);

ABI(sizeof(struct ward_approval_question) == 104);
OFF(ward_approval_question, argv, 0);
OFF(ward_approval_question, cwd, 8);
OFF(ward_approval_question, reason, 16);
OFF(ward_approval_question, justification, 24);
OFF(ward_approval_question, unsandboxed, 32);
OFF(ward_approval_question, retry, 33);
OFF(ward_approval_question, denials, 40);
OFF(ward_approval_question, n_denials, 48);
OFF(ward_approval_question, denials_dropped, 56);
OFF(ward_approval_question, proposed_prefix_rule, 64);
OFF(ward_approval_question, decisions, 72);
OFF(ward_approval_question, network_target, 80);
OFF(ward_approval_question, proposed_network_rule, 88);
OFF(ward_approval_question, unprotect, 96);
#endif

int main(void)
{
	/* The checks are the compilation; at run time, that the library answers. */
	printf("1..1\n%s 1 - libward %s, layout as released\n", ward_version()[0] ? "ok" : "not ok",
	       ward_version());
	return 0;
}
