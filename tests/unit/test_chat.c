/* test_chat.c -- every chat format rendered for one 3-message conversation,
 * compared with the exact text llama.cpp's built-in format of that name
 * renders (and, for gsm-tiny, tools/corpus.py's render_chat); template
 * recognition from real template snippets; errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support/fail_alloc.h"

#include "base/mem.h"
#include "text/chat.h"

#define EOS_DS "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"
#define USER_DS "<\xEF\xBD\x9CUser\xEF\xBD\x9C>"
#define ASSISTANT_DS "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>"

static const struct gsmrt_chat_msg conv[3] = {
    {GSMRT_CHAT_ROLE_SYSTEM, "You are helpful."},
    {GSMRT_CHAT_ROLE_USER, "Hi, who are you?"},
    {GSMRT_CHAT_ROLE_ASSISTANT, "I am GSM."},
};

static void check(enum gsmrt_chat_format f, bool gen, const char *expected)
{
    char *text = NULL;
    size_t len = 0;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    assert_int_equal(gsmrt_chat_render(NULL, f, conv, 3, gen, &text, &len, &err), GSMRT_OK);
    assert_string_equal(text, expected);
    assert_int_equal(len, strlen(expected));
    gsmrt_mem_free(NULL, text);
}

static void test_render(void **state)
{
    (void)state;
    check(GSMRT_CHAT_FORMAT_CHATML, true,
          "<|im_start|>system\nYou are helpful.<|im_end|>\n"
          "<|im_start|>user\nHi, who are you?<|im_end|>\n"
          "<|im_start|>assistant\nI am GSM.<|im_end|>\n"
          "<|im_start|>assistant\n");
    check(GSMRT_CHAT_FORMAT_LLAMA3, true,
          "<|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
          "<|start_header_id|>user<|end_header_id|>\n\nHi, who are you?<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\nI am GSM.<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    check(GSMRT_CHAT_FORMAT_DEEPSEEK2, true,
          "You are helpful.\n\nUser: Hi, who are you?\n\nAssistant: I am GSM." EOS_DS "Assistant:");
    check(GSMRT_CHAT_FORMAT_DEEPSEEK3, true,
          "You are helpful.\n\n" USER_DS "Hi, who are you?" ASSISTANT_DS "I am GSM." EOS_DS ASSISTANT_DS);
    check(GSMRT_CHAT_FORMAT_GSM_TINY, true,
          "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi, who are you?<|end|>\n"
          "<|assistant|>\nI am GSM.<|end|>\n<|assistant|>\n");
    /* without the generation prompt */
    check(GSMRT_CHAT_FORMAT_DEEPSEEK2, false,
          "You are helpful.\n\nUser: Hi, who are you?\n\nAssistant: I am GSM." EOS_DS);
    check(GSMRT_CHAT_FORMAT_GSM_TINY, false,
          "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi, who are you?<|end|>\n"
          "<|assistant|>\nI am GSM.<|end|>\n");
}

static void test_llama3_trims(void **state)
{
    (void)state;
    const struct gsmrt_chat_msg m[1] = {{GSMRT_CHAT_ROLE_USER, " \n Hi there \t\n"}};
    char *text = NULL;
    assert_int_equal(gsmrt_chat_render(NULL, GSMRT_CHAT_FORMAT_LLAMA3, m, 1, false, &text, NULL, NULL), GSMRT_OK);
    assert_string_equal(text, "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>");
    gsmrt_mem_free(NULL, text);
    /* other formats keep the content as it is */
    assert_int_equal(gsmrt_chat_render(NULL, GSMRT_CHAT_FORMAT_CHATML, m, 1, false, &text, NULL, NULL), GSMRT_OK);
    assert_string_equal(text, "<|im_start|>user\n \n Hi there \t\n<|im_end|>\n");
    gsmrt_mem_free(NULL, text);
    /* an empty conversation with a generation prompt */
    assert_int_equal(gsmrt_chat_render(NULL, GSMRT_CHAT_FORMAT_DEEPSEEK3, NULL, 0, true, &text, NULL, NULL),
                     GSMRT_OK);
    assert_string_equal(text, ASSISTANT_DS);
    gsmrt_mem_free(NULL, text);
}

static void detect(const char *tmpl, enum gsmrt_chat_format expected)
{
    enum gsmrt_chat_format f = 0;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    assert_int_equal(gsmrt_chat_format_detect(tmpl, &f, &err), GSMRT_OK);
    assert_int_equal(f, expected);
}

static void test_detect(void **state)
{
    (void)state;
    detect("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
           "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
           GSMRT_CHAT_FORMAT_CHATML);
    detect("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
           "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
           "'<|eot_id|>' %}{{ content }}{% endfor %}",
           GSMRT_CHAT_FORMAT_LLAMA3);
    detect("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + "
           "message['content'] + '\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + "
           "message['content'] + eos_token }}{% elif message['role'] == 'system' %}{{ message['content'] + "
           "'\\n\\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}",
           GSMRT_CHAT_FORMAT_DEEPSEEK2);
    detect("{% for message in messages %}{%- if message['role'] == 'user' %}{{'" USER_DS "' + message['content']}}"
           "{%- endif %}{%- if message['role'] == 'assistant' %}{{'" ASSISTANT_DS "' + message['content'] + '"
           EOS_DS "'}}{%- endif %}{%- endfor -%}{% if add_generation_prompt %}{{'" ASSISTANT_DS "'}}{% endif %}",
           GSMRT_CHAT_FORMAT_DEEPSEEK3);
    /* tools/corpus.py CHAT_TEMPLATE, as stored in models/gsm-tiny.gguf */
    detect("{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
           "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}",
           GSMRT_CHAT_FORMAT_GSM_TINY);
    /* a bare format name works as a template too */
    detect("deepseek3", GSMRT_CHAT_FORMAT_DEEPSEEK3);
}

static void test_unknown(void **state)
{
    (void)state;
    enum gsmrt_chat_format f = 0;
    struct gsmrt_err err;
    gsmrt_err_clear(&err);
    assert_int_equal(gsmrt_chat_format_detect("{{ messages | tojson }}", &f, &err), GSMRT_E_UNSUPPORTED);
    const char *names[] = {"chatml", "llama3", "deepseek2", "deepseek3", "gsm-tiny"};
    for (size_t i = 0; i < 5; i++) assert_non_null(strstr(err.msg, names[i]));

    assert_int_equal(gsmrt_chat_format_from_name("vicuna", &f, &err), GSMRT_E_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "'vicuna'"));
    assert_non_null(strstr(err.msg, "gsm-tiny"));
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(gsmrt_chat_format_from_name(names[i], &f, NULL), GSMRT_OK);
        assert_string_equal(gsmrt_chat_format_name(f), names[i]);
    }
    assert_int_equal(gsmrt_chat_format_from_name("phi3", &f, NULL), GSMRT_OK);
    assert_int_equal(f, GSMRT_CHAT_FORMAT_GSM_TINY);

    char *text = (char *)"sentinel";
    const struct gsmrt_chat_msg bad[1] = {{(enum gsmrt_chat_role)7, "x"}};
    assert_int_equal(gsmrt_chat_render(NULL, GSMRT_CHAT_FORMAT_CHATML, bad, 1, false, &text, NULL, &err),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_null(text);
    const struct gsmrt_chat_msg nul[1] = {{GSMRT_CHAT_ROLE_USER, NULL}};
    assert_int_equal(gsmrt_chat_render(NULL, GSMRT_CHAT_FORMAT_CHATML, nul, 1, false, &text, NULL, &err),
                     GSMRT_E_INVALID_ARGUMENT);
    assert_int_equal(gsmrt_chat_render(NULL, (enum gsmrt_chat_format)0, conv, 3, false, &text, NULL, &err),
                     GSMRT_E_INVALID_ARGUMENT);
}

/* Every allocation failing in turn: a clean GSMRT_E_OUT_OF_HOST_MEMORY and
 * nothing leaked (cmocka's test_malloc checks the frees). */

static void test_oom_sweep(void **state)
{
    (void)state;
    int ok_at = -1;
    for (int i = 0; i < 100 && ok_at < 0; i++) {
        struct fail_alloc c;
        fail_alloc_init(&c, i);
        gsmrt_allocator a = fail_alloc_allocator(&c);
        char *text = NULL;
        gsmrt_status st = gsmrt_chat_render(&a, GSMRT_CHAT_FORMAT_LLAMA3, conv, 3, true, &text, NULL, NULL);
        if (st != GSMRT_OK) {
            assert_int_equal(st, GSMRT_E_OUT_OF_HOST_MEMORY);
            assert_null(text);
            continue;
        }
        ok_at = i;
        gsmrt_mem_free(&a, text);
    }
    assert_true(ok_at > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_llama3_trims),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_oom_sweep),
    };
    return cmocka_run_group_tests_name("chat", tests, NULL, NULL);
}
