// The text of default_calibration_text(), written for pagoda (see calibration_text.h).
#include "assets/calibration_text.h"

namespace pagoda {

std::string_view default_calibration_text() {
  return R"(Once upon a time, there was a little girl named Mia. She had a red ball that she loved very much. Every morning she took the ball to the park and played with her dog, Max. One day, Mia threw the ball very high. It flew over the fence and landed in the pond. Mia was sad. "My ball is gone," she said. Max barked and jumped into the water. He swam to the ball and brought it back to Mia. Mia hugged Max and said, "Thank you, Max! You are the best dog." From that day on, they always played far away from the pond.

Tom was a small boy who lived in a big house near the woods. He liked to look at the birds in the trees. One sunny day, he saw a baby bird on the ground. The bird could not fly. Tom was worried. He picked up the bird very gently and took it to his mom. "Mom, can we help this bird?" he asked. His mom smiled and said, "Yes, we can. Let us give it some water and find its nest." They found the nest in a low tree and put the bird back. The mother bird sang a happy song. Tom felt proud because he was kind to the little bird.

Lily had a new box of crayons. She wanted to draw a picture for her grandma. She drew a big yellow sun, a green tree and a blue sky. Then she drew her grandma with a pink hat. Her brother Ben came and wanted the crayons too. Lily did not want to share at first. Then she saw that Ben was sad. She gave him the red crayon and the black one. Ben drew a car next to the tree. When grandma saw the picture, she laughed and clapped her hands. "This is the best picture I have ever seen," she said. Lily and Ben were very happy that they made it together.

There was a fat cat named Fluffy who liked to sleep in the sun. One day a little mouse came out of a hole in the wall. The mouse was hungry and looked for some cheese. Fluffy opened one eye and saw the mouse. But Fluffy was too sleepy to run. The mouse found a piece of cheese and said, "Thank you for not chasing me, cat." Fluffy yawned and said, "You can have the cheese if you let me sleep." The mouse and the cat became friends. Every day the mouse told Fluffy stories, and Fluffy listened until she fell asleep again.

Sam and his dad went to the beach. The water was cold and the sand was warm. Sam wanted to build a big castle. He filled his bucket with wet sand and turned it over. His dad helped him make tall towers and a long wall. Then a big wave came and knocked the castle down. Sam started to cry. His dad hugged him and said, "Do not be sad. We can build a new one, even better than before." So they built another castle, far from the water. This time the waves could not reach it, and Sam was happy all day.

Anna found a shiny key in the garden. She did not know what it was for. She tried it on the front door, but it did not fit. She tried it on her toy box, but it did not open. Then she saw an old wooden box under the bed. The key fit! Inside the box there were old photos of her mom when she was a little girl. Anna ran to show her mom. Her mom looked at the photos and smiled. "I forgot about this box," she said. They sat together and looked at every picture, and her mom told her a story about each one.

One day, a little dog named Spot wanted to find a friend. He went to the farm and saw a cow. "Will you play with me?" Spot asked. "I am too big to play," said the cow. Spot went to the pond and saw a duck. "Will you play with me?" he asked. "I am too busy swimming," said the duck. Spot was sad and sat under a tree. Then a small kitten came and sat next to him. "I want to play," said the kitten. Spot wagged his tail. They ran and jumped in the grass until the sun went down. Spot was glad he had a new friend.
)";
}

}  // namespace pagoda
