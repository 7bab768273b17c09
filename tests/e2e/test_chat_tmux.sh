#!/bin/sh
# test_chat_tmux.sh GSM MODEL -- `gsm chat` in a real terminal (tmux): an
# answer streams; Ctrl-C stops a long answer and the chat goes on; /stats,
# /help, /reset work; invalid UTF-8 and a very long line are handled; Ctrl-C
# at the prompt leaves with exit code 0, and so does Ctrl-D. Two quick Ctrl-C
# during an answer stop it and do not leave (issue 12).
set -u
gsm=$1 model=$2
tmp=$(mktemp -d)
n_start=0
sock="gsmtest$$-0"
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
failures=0 passes=0
check() {
  label=$1; shift
  if "$@"; then echo "ok   $label"; passes=$((passes + 1)); else echo "FAIL $label"; failures=$((failures + 1)); fi
}
screen() { tmux -L "$sock" capture-pane -p -S -400 -t chat 2> /dev/null | grep -v '^ *$'; }
# wait_for TEXT [SECONDS]: polls the screen until TEXT appears
wait_for() {
  i=0
  while [ $i -lt $(( ${2:-30} * 10 )) ]; do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}
keys() { tmux -L "$sock" send-keys -t chat "$@"; }
start() {   # start [OPTIONS]: a fresh tmux server (own socket) running a fresh chat
  tmux -L "$sock" kill-server 2>/dev/null
  n_start=$((n_start + 1))
  sock="gsmtest$$-$n_start"
  tmux -L "$sock" new-session -d -s chat -x 160 -y 50 \
    "$gsm chat -m '$model' --temp 1.0 --top-k 0 --top-p 1 --min-p 0 $*; echo EXIT=\$?; sleep 60"
}

start -n 4000 --ignore-eos   # answers run until stopped
check "chat starts and prompts" wait_for "/help for commands"
keys "Hello!" Enter
sleep 2
keys C-c
check "an answer streams, Ctrl-C stops it and the prompt returns" wait_for "(stopped)" 60
keys "/stats" Enter
check "/stats reports the answer" wait_for "last answer:"
keys "/help" Enter
check "/help lists the commands" wait_for "/reset   forget the conversation"
keys "Tell me a very long story about the sea." Enter
sleep 1.5
keys C-c
check "Ctrl-C stops a running answer" wait_for "(stopped)" 30
keys "And now?" Enter
sleep 2
keys C-c
check "the chat goes on after a stopped answer: the next one streams and stops too" \
  sh -c "sleep 3; [ \$(tmux -L '$sock' capture-pane -p -S -400 -t chat | grep -c '(stopped)') -ge 3 ]"
keys "One more story, please." Enter
sleep 2
keys C-c
sleep 0.15
keys C-c
check "two Ctrl-C during an answer stop it and the chat stays" \
  sh -c "sleep 3; [ \$(tmux -L '$sock' capture-pane -p -S -400 -t chat | grep -c '(stopped)') -ge 4 ] &&
         ! tmux -L '$sock' capture-pane -p -S -400 -t chat | grep -q 'EXIT='"
keys "/help" Enter
check "the chat answers commands after the two Ctrl-C" \
  sh -c "sleep 2; [ \$(tmux -L '$sock' capture-pane -p -S -400 -t chat | grep -c '/reset   forget') -ge 2 ]"
printf 'bad \377\376 bytes' > "$tmp/bad"
tmux -L "$sock" load-buffer "$tmp/bad"
tmux -L "$sock" paste-buffer -t chat
keys Enter
check "invalid UTF-8 is refused with a message" wait_for "invalid UTF-8"
keys "/reset" Enter
check "/reset forgets the conversation" wait_for "conversation forgotten" 60
keys C-c
check "Ctrl-C at the prompt leaves with exit code 0" wait_for "EXIT=0"
# a very long line (10,000 characters) in a new chat with a 512-token context
python3 -c 'print("word " * 2000, end="")' > "$tmp/long"
start -c 512
wait_for "/help for commands" > /dev/null
tmux -L "$sock" load-buffer "$tmp/long"
tmux -L "$sock" paste-buffer -t chat
keys Enter
check "a 10,000-character line that does not fit is refused" wait_for "(error: " 60
check "the refusal says the context is too small" wait_for "context holds 512"
keys "Hi" Enter
check "the chat goes on after a refused line" sh -c "sleep 6; tmux -L '$sock' capture-pane -p -S -400 -t chat | grep -v '^ *\$' | tail -n 1 | grep -q '^>'"
start
wait_for "/help for commands" > /dev/null
keys C-d
check "Ctrl-D leaves with exit code 0" wait_for "EXIT=0"

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
