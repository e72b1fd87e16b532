# Ports on 127.0.0.1 for the servers a test starts (sourced, not a test).
#   free_port             a TCP port nothing listens on now (the kernel's
#                         pick; a server that then fails to bind it is
#                         started again on another: see wait_listen)
#   wait_listen PORT PID  wait (5 s) until something listens on 127.0.0.1:PORT;
#                         fails at once when PID has ended
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_listen() {
  local _
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
